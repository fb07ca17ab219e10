package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestServeEndsStreamsOnSIGTERM: `attestd serve` streams (step 9 of
// serve), and on SIGTERM its open streams end at once, cleanly, while the
// node keeps draining for an hour; a new stream is then 503.
func TestServeEndsStreamsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	redisURL, prefix := testenv.Redis(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t),
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=info",
		"ATTESTD_DRAIN_TIMEOUT=1h", "ATTESTD_SHUTDOWN_TIMEOUT=5s"}
	runCmd(t, bin, env, "migrate")
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	d := startDaemon(t, bin, append(env, "ATTESTD_HTTP_ADDR="+addr), "serve")
	url := "http://" + addr + "/api/v1/attestations/stream"
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var res *http.Response
	d.waitFor(t, "a stream", 50*time.Millisecond, func() (bool, string) {
		r, err := c.Get(url)
		if err != nil {
			return false, err.Error()
		}
		if r.StatusCode != http.StatusOK {
			r.Body.Close()
			return false, r.Status
		}
		res = r
		return true, ""
	})
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	if l, err := br.ReadString('\n'); err != nil || l != "retry: 2000\n" {
		t.Fatalf("first line %q %v", l, err)
	}
	testenv.Must(t, d.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM")
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, br); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the stream ended uncleanly on SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the stream outlived SIGTERM by 30 s:\n%s", d.output.String())
	}
	if r, err := c.Get(url); err != nil || r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a new stream while draining: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	select {
	case <-d.done:
		t.Fatalf("attestd serve stopped during its drain:\n%s", d.output.String())
	default:
	}
	if !strings.Contains(d.output.String(), `"msg":"live stream"`) {
		t.Errorf("serve did not log the live stream step:\n%s", d.output.String())
	}
	testenv.Must(t, d.cmd.Process.Signal(syscall.SIGTERM), "second SIGTERM")
	<-d.done
}
