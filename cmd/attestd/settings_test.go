package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestRolesNameEveryBadSettingBeforeConnecting runs serve, index, worker,
// local (make run) and cluster (make cluster) from the built binary with
// one bad value in several packages each: every one is named in the one
// error the process exits with, and the process dialled none of the
// stores or the chain (all pointed at a listener that counts
// connections). local and cluster start nothing either: their directory
// stays empty (no PostgreSQL, Redis, chain or witness was started).
func TestRolesNameEveryBadSettingBeforeConnecting(t *testing.T) {
	bin := testenv.BuildAttestd(t)
	addr, dialled := testenv.ConnCounter(t)
	serveBad := []string{"ATTESTD_RATE_LIMIT=-1", "ATTESTD_KEY_CACHE_TTL=forever", "ATTESTD_STREAM_MAX_PER_IP=0.5", "ATTESTD_X402_PAY_TO=not-a-key", "ATTESTD_WEBHOOK_TIMEOUT=never"}
	indexBad := []string{"ATTESTD_INDEXER_CONCURRENCY=0", "ATTESTD_PURGE_TIMEOUT=soon", "ATTESTD_LOG_BATCH=big", "ATTESTD_X402_RECONCILE_INTERVAL=often"}
	for _, c := range []struct {
		role string
		dir  bool // the command takes -dir, which must stay empty
		bad  []string
	}{
		{"serve", false, serveBad},
		{"index", false, indexBad},
		{"worker", false, []string{"ATTESTD_DB_MAX_CONNS=many", "ATTESTD_WEBHOOK_MAX_PER_ACCOUNT=all"}},
		{"local", true, append(append([]string{"ATTESTD_WEBHOOK_MAX_PER_ACCOUNT=all"}, serveBad[:3]...), indexBad[:2]...)},
		{"cluster", true, append([]string{"ATTESTD_WEBHOOK_MAX_PER_ACCOUNT=all", "ATTESTD_LOG_BATCH=big"}, serveBad[:2]...)},
	} {
		role, bad := c.role, c.bad
		t.Run(role, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var args []string
			dir := filepath.Join(t.TempDir(), "run")
			if c.dir {
				args = []string{"-dir", dir}
			}
			cmd := exec.CommandContext(ctx, bin, append([]string{role}, args...)...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DATABASE_URL=postgres://" + addr + "/db",
				"REDIS_URL=redis://" + addr, "ATTESTD_SOLANA_RPC_URL=http://" + addr, "ATTESTD_METRICS_ADDR=", "ATTESTD_HTTP_ADDR=127.0.0.1:0"}, bad...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("attestd %s started with %d bad settings:\n%s", role, len(bad), out)
			}
			for _, kv := range bad {
				name := kv[:strings.IndexByte(kv, '=')]
				if !strings.Contains(string(out), name) {
					t.Errorf("attestd %s did not name %s:\n%s", role, name, out)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("attestd %s started something in %s before refusing its settings: %v", role, dir, entries)
			}
		})
	}
	if n := dialled.Load(); n != 0 {
		t.Fatalf("the processes made %d connections before refusing their settings", n)
	}
}
