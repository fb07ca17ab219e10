package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// blackhole accepts connections and never answers: a store that hangs.
func blackhole(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testenv.Must(t, err, "listen")
	accepted = &atomic.Int32{}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			accepted.Add(1)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), accepted
}

// TestStartAnswersSIGTERMAtEveryStep: a start stopped by a setting that
// names a FIFO or a device ends at once with a line naming it, and a start
// held by a store that never answers ends on SIGTERM.
func TestStartAnswersSIGTERMAtEveryStep(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	db := testenv.Database(t)
	redisURL, prefix := testenv.Redis(t)
	fifo := filepath.Join(t.TempDir(), "key.fifo")
	testenv.Must(t, syscall.Mkfifo(fifo, 0o600), "fifo")
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=info",
		"ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_HTTP_ADDR=127.0.0.1:0"}
	runCmd(t, bin, append([]string{"DATABASE_URL=" + db}, base...), "migrate")
	for _, c := range []struct {
		name string
		env  []string
		want string
	}{
		{"log key file a FIFO", []string{"DATABASE_URL=" + db, "REDIS_URL=" + redisURL, "ATTESTD_LOG_KEY_FILE=" + fifo}, "a FIFO"},
		{"fee payer keypair a device", []string{"DATABASE_URL=" + db, "REDIS_URL=" + redisURL,
			"ATTESTD_X402_PAY_TO=9Z1YShWGG6hAh87VubvUojcrQsgJTZZ6FNRtt7ZvxD4a", "ATTESTD_X402_FEE_PAYER_KEYPAIR=/dev/zero"}, "a character device"},
	} {
		d := startDaemon(t, bin, append(append([]string(nil), base...), c.env...), "serve")
		testenv.WaitFor(t, c.name+": attestd serve exits", testenv.Patience, func() bool {
			select {
			case <-d.done:
				return true
			default:
				return false
			}
		})
		if out := d.output.String(); d.cmd.ProcessState.ExitCode() == 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant a line saying %q", c.name, d.cmd.ProcessState.ExitCode(), out, c.want)
		}
	}
	for _, c := range []struct {
		name string
		env  func(hung string) []string
	}{
		{"PostgreSQL never answers", func(hung string) []string {
			return []string{"DATABASE_URL=postgres://u@" + hung + "/db?sslmode=disable", "REDIS_URL=" + redisURL}
		}},
		{"Redis never answers", func(hung string) []string {
			return []string{"DATABASE_URL=" + db, "REDIS_URL=redis://" + hung + "/0"}
		}},
	} {
		hung, accepted := blackhole(t)
		d := startDaemon(t, bin, append(append([]string(nil), base...), c.env(hung)...), "serve")
		d.waitFor(t, c.name+": attestd serve connects", 20*time.Millisecond, func() (bool, string) {
			return accepted.Load() > 0, ""
		})
		testenv.Must(t, d.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM")
		testenv.WaitForState(t, c.name+": attestd serve ends on SIGTERM", testenv.Patience, func() (bool, string) {
			select {
			case <-d.done:
				return true, ""
			default:
				return false, d.output.String()
			}
		})
	}
}
