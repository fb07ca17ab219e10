package main

import (
	"os"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestHealthSaysDegradedWhileDataMayBeStale runs `attestd serve` and
// `attestd index` against a chain simulator and checks /health through the
// states an operator meets: no indexer has run yet, everything up, the
// indexer behind the chain, the chain unreachable. Reads are served all
// along (200), but only the second state is "ok"; the others are
// "degraded" and say why.
func TestHealthSaysDegradedWhileDataMayBeStale(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	chain, chainEnv := startChain(t, devnet.Config{Agents: 1, Attestations: 5})
	redisURL, prefix := testenv.Redis(t)
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + testenv.Database(t),
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn",
		"ATTESTD_TRUSTED_PROXIES=127.0.0.1/32"}, chainEnv...)
	runCmd(t, bin, env, "migrate")
	node := serveNode(t, bin, env)
	has := func(h health, sub string) bool {
		for _, r := range h.Reasons {
			if strings.Contains(r, sub) {
				return true
			}
		}
		return false
	}

	// No indexer has ever run against this database.
	h := waitHealth(t, node, "degraded before any indexer ran", func(h health) bool {
		return h.Status == "degraded" && h.Chain.Reachable && has(h, "indexer: no indexer has run")
	})
	if len(h.Reasons) != 1 || h.Indexer.Synced {
		t.Fatalf("before any indexer ran: %+v, want the one indexer reason", h)
	}

	// An indexer follows the chain: ok, no reason.
	ix := startDaemon(t, bin, env, "index")
	waitHealth(t, node, "ok once the indexer is synced", func(h health) bool {
		return h.Status == "ok" && len(h.Reasons) == 0 && h.Indexer.Synced && h.Chain.Reachable
	})

	// The indexer stops and the chain moves on: behind.
	ix.stop()
	chain.AdvanceSlots(500)
	h = waitHealth(t, node, "degraded while the indexer lags", func(h health) bool {
		return h.Status == "degraded" && has(h, "slots behind the chain")
	})
	if h.Indexer.Synced || !h.Chain.Reachable || len(h.Reasons) != 1 {
		t.Fatalf("indexer behind: %+v, want the one indexer reason", h)
	}

	// The chain's RPC node goes away.
	chain.Close()
	h = waitHealth(t, node, "degraded while the chain is unreachable", func(h health) bool {
		return h.Status == "degraded" && !h.Chain.Reachable && has(h, "chain: ")
	})
	if !has(h, "does not answer") {
		t.Fatalf("chain down: %+v", h)
	}
}
