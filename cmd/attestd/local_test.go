package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestLocalFromPrivateDirectory runs `attestd local` (make run) the way a
// new user does, from a directory only its owner can enter (a `mktemp -d`,
// or a checkout under /root): as root, PostgreSQL runs as an unprivileged
// account that cannot reach .run/ there. The API must come up, say where
// the data lives, and find it again on the next run.
func TestLocalFromPrivateDirectory(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	dir, err := os.MkdirTemp("", "attestd-local-") // mode 0700
	testenv.Must(t, err, "temp dir")
	t.Cleanup(func() { os.RemoveAll(dir) })
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("temp dir mode %v %v, want 0700", fi.Mode(), err)
	}
	root := os.Geteuid() == 0
	if !root {
		t.Log("not root: PostgreSQL runs as this user and can reach the directory; checking that make run works")
	}
	run := func(t *testing.T) (logs string) {
		port, err := devstack.FreePort()
		testenv.Must(t, err, "free port")
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, fmt.Sprintf("ATTESTD_HTTP_ADDR=127.0.0.1:%d", port),
			"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR="}
		d := startDaemonIn(t, dir, bin, env, "local", "--agents", "2", "--attestations", "20")
		defer d.stop()
		base := fmt.Sprintf("http://127.0.0.1:%d/api/v1", port)
		d.waitFor(t, "attestd local serves the seeded attestations", 200*time.Millisecond, func() (bool, string) {
			var st struct{ Attestations int }
			resp, err := http.Get(base + "/stats")
			if err != nil {
				return false, err.Error()
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			return err == nil && resp.StatusCode == http.StatusOK && st.Attestations >= 20,
				fmt.Sprintf("/stats %s, %d attestations (%v)", resp.Status, st.Attestations, err)
		})
		// make run turns the transparency log on: the seeded finalized
		// attestations get a signed checkpoint.
		d.waitFor(t, "attestd local serves a log checkpoint", 200*time.Millisecond, func() (bool, string) {
			resp, err := http.Get(strings.TrimSuffix(base, "/api/v1") + "/log/checkpoint") // at the log's origin
			if err != nil {
				return false, err.Error()
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lines := strings.Split(string(body), "\n")
			return resp.StatusCode == http.StatusOK && len(lines) > 2 && lines[1] != "0", fmt.Sprintf("/log/checkpoint %s %q", resp.Status, body)
		})
		return d.output.String()
	}
	first := run(t)
	data := dataDir(t, first)
	if data == "" {
		t.Fatalf("no log line says where the postgres data lives:\n%s", first)
	}
	if root {
		// Relocated: removed with the test (a user keeps it for the next run).
		t.Cleanup(func() { os.RemoveAll(data) })
		if strings.HasPrefix(data, dir) || !strings.Contains(first, "data lives outside .run") {
			t.Fatalf("as root, the data should live outside %s and the log say so; it is in %s:\n%s", dir, data, first)
		}
	}
	second := run(t)
	if got := dataDir(t, second); got != data {
		t.Fatalf("second run keeps its data in %s, the first in %s", got, data)
	}
	if !strings.Contains(second, "database already seeded") {
		t.Fatalf("the second run did not find the first run's data:\n%s", second)
	}
}

// dataDir finds the postgres data directory in attestd local's log.
func dataDir(t *testing.T, logs string) string {
	for _, line := range strings.Split(logs, "\n") {
		var l struct{ Msg, Data string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "local postgres") && l.Data != "" {
			return l.Data
		}
	}
	return ""
}
