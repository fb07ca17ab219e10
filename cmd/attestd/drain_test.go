package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestServeDrainsOnSIGTERM runs `attestd serve` with a long drain: after
// SIGTERM its /health answers 503 draining while the other routes still
// answer, it logs the drain's start, and a second SIGTERM ends the drain
// and the process (logging the end).
func TestServeDrainsOnSIGTERM(t *testing.T) {
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
	base := "http://" + addr + "/api/v1"
	status := func(path string) (int, map[string]any) {
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(base + path)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	d.waitFor(t, "serving", 50*time.Millisecond, func() (bool, string) {
		code, body := status("/health")
		return code == http.StatusOK, fmt.Sprintf("/health %d %v", code, body)
	})

	testenv.Must(t, d.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM")
	d.waitFor(t, "draining", 50*time.Millisecond, func() (bool, string) {
		code, body := status("/health")
		return code == http.StatusServiceUnavailable && body["status"] == "draining", fmt.Sprintf("/health %d %v", code, body)
	})
	if code, _ := status("/stats"); code != http.StatusOK {
		t.Fatalf("GET /stats while draining: %d, want 200", code)
	}
	if !strings.Contains(d.output.String(), `"msg":"draining: /health answers 503`) {
		t.Errorf("no drain start logged:\n%s", d.output.String())
	}
	select {
	case <-d.done:
		t.Fatalf("attestd serve stopped during its drain:\n%s", d.output.String())
	default:
	}

	testenv.Must(t, d.cmd.Process.Signal(syscall.SIGTERM), "second SIGTERM")
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("a second SIGTERM did not end the drain:\n%s", d.output.String())
	}
	out := d.output.String()
	if !strings.Contains(out, `"msg":"drain over"`) || !strings.Contains(out, "a second signal ended it early") {
		t.Errorf("no drain end logged:\n%s", out)
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after a drained stop:\n%s", code, out)
	}
}
