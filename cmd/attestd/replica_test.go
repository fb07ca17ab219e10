package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestServeWithReadReplica runs the binary as an operator with a streaming
// replica would: DATABASE_READ_URLS names it, /health lists it by position
// (never by address) with its lag, /metrics names it, and when replay is
// paused past the lag bound the node reports it lagging and degraded while
// every read still answers, fresh.
func TestServeWithReadReplica(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	rp := testenv.OwnReplicated(t)
	url, prefix := testenv.Redis(t)
	metricsPort, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"DATABASE_URL=" + rp.PrimaryURL, "DATABASE_READ_URLS=" + rp.ReplicaURL,
		"ATTESTD_REPLICA_MAX_LAG=500ms", "ATTESTD_REPLICA_POLL_INTERVAL=20ms",
		"REDIS_URL=" + url, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_RATE_LIMIT=0",
		fmt.Sprintf("ATTESTD_METRICS_ADDR=127.0.0.1:%d", metricsPort), "ATTESTD_LOG_LEVEL=warn",
	}
	// A chain and an indexer that follows it: without them /health rightly
	// says degraded whatever the replica does.
	_, chainEnv := startChain(t, devnet.Config{})
	env = append(env, chainEnv...)
	runCmd(t, bin, env, "migrate")
	runCmd(t, bin, env, "seed", "--agents", "2", "--attestations", "30")
	startDaemon(t, bin, env, "index")
	node := serveNode(t, bin, env)
	health := func() app.Health {
		var h app.Health
		get(t, node+"/health", "127.0.0.1", "", &h)
		return h
	}
	waitHealth := func(what string, ok func(app.Health) bool) app.Health {
		t.Helper()
		var h app.Health
		testenv.WaitForState(t, what, testenv.Patience, func() (bool, string) {
			h = health()
			return ok(h), fmt.Sprintf("health %+v", h)
		})
		return h
	}
	h := waitHealth("the replica ok", func(h app.Health) bool { return len(h.Replicas) == 1 && h.Replicas[0].Status == "ok" })
	// No chain or indexer runs here, so the status is degraded for them;
	// the replica itself must give no reason.
	if h.Status == "down" || h.Replicas[0].Index != 1 || h.Replicas[0].LagSeconds == nil || reasonAbout(h, "replica") {
		t.Fatalf("health %+v", h)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	testenv.Must(t, err, "metrics")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"attestd_replica_lag_seconds{replica=", "attestd_replica_usable{replica=", "attestd_replica_replay_lsn{replica="} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	raw, err := http.Get(node + "/health")
	testenv.Must(t, err, "health")
	hb, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	if strings.Contains(string(hb), fmt.Sprint(rp.Replica.Port)) {
		t.Fatalf("/health names the replica's address: %s", hb)
	}

	rp.PauseReplay(t)
	runCmd(t, bin, env, "seed", "--agents", "2", "--attestations", "45", "--seed", "2")
	waitHealth("the replica lagging", func(h app.Health) bool {
		return h.Replicas[0].Status == "lagging" && h.Status == "degraded" && reasonAbout(h, "replica 1: lagging")
	})
	var stats struct{ Attestations int }
	if s := get(t, node+"/stats", "127.0.0.1", "", &stats); s != http.StatusOK || stats.Attestations != 75 {
		t.Fatalf("stats while the replica lags: %d, %d attestations (want 75)", s, stats.Attestations)
	}
	rp.ResumeReplay(t)
	waitHealth("the replica ok again", func(h app.Health) bool {
		return h.Replicas[0].Status == "ok" && h.Status != "down" && !reasonAbout(h, "replica")
	})
}

// reasonAbout reports whether one of h's reasons concerns part.
func reasonAbout(h app.Health, part string) bool {
	for _, r := range h.Reasons {
		if strings.HasPrefix(r, part) {
			return true
		}
	}
	return false
}
