package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/jackc/pgx/v5"
)

// statsCount reads /api/v1/stats' attestation count; ok is false while the
// API does not answer.
func statsCount(base string) (int, bool) {
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get(base + "/api/v1/stats")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var st struct{ Attestations int }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0, false
	}
	return st.Attestations, true
}

// indexedSlot reads /api/v1/stats' indexedSlot (0 while it does not
// answer).
func indexedSlot(base string) uint64 {
	cl := &http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get(base + "/api/v1/stats")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var st struct{ IndexedSlot uint64 }
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return 0
	}
	return st.IndexedSlot
}

// TestLocalContinuesItsChain runs `attestd local` (make run) twice in the
// same directory. The first run lasts about 20 s past its first traffic
// (its chain passes slot 50); the second must index new attestations past
// the first's last slot sooner after its API answers than the first run's
// chain took to reach that slot, because its simulator continues the kept
// chain (.run/chain) instead of replaying it from slot 1 below the
// indexer's checkpoint.
func TestLocalContinuesItsChain(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	dir := t.TempDir()
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ATTESTD_HTTP_ADDR=127.0.0.1:" + fmt.Sprint(port),
		"ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_WORKER_METRICS_ADDR=", "ATTESTD_RATE_LIMIT=0"}
	// waitCount polls /stats until cond holds, and returns the count and
	// how long that took.
	waitCount := func(d *daemon, what string, cond func(int) bool) (int, time.Duration) {
		t.Helper()
		var n int
		took := d.waitFor(t, what, 200*time.Millisecond, func() (bool, string) {
			c, ok := statsCount(base)
			n = c
			return ok && cond(c), fmt.Sprintf("count %d (answered: %t)", c, ok)
		})
		return n, took
	}
	// Run from the checkout, as make run does (its local witness is built
	// from the project's tool dependency), keeping the data in dir.
	checkout, err := os.Getwd()
	testenv.Must(t, err, "working directory")
	env = append(env, goToolEnv(t)...)
	args := []string{"local", "--dir", filepath.Join(dir, ".run"), "--agents", "2", "--attestations", "20"}
	// witnessed waits until the served checkpoint carries the local
	// witness's cosignature.
	witnessed := func(what string) {
		t.Helper()
		waitHealth(t, base+"/api/v1", what, func(h health) bool {
			return h.Log != nil && h.Log.Quorum == 1 && slices.Contains(h.Log.WitnessedBy, "witness.attestd.local/w")
		})
	}
	first := startDaemonIn(t, checkout, bin, env, args...)
	// 20 seeded + 2,000 of the simulator's first traffic, then 2 a second.
	seeded, _ := waitCount(first, "first run indexes the simulator", func(n int) bool { return n >= 2020 })
	live := time.Now() // the chain runs: its slots pass from here on, at least
	// About 20 s of live traffic (2 a second): the chain passes slot 50.
	before, _ := waitCount(first, "live attestations in the first run", func(n int) bool { return n >= seeded+40 })
	lastSlot := indexedSlot(base)
	// A chain replayed from its start stays below lastSlot for at least
	// as long as the first run's chain took to reach it: as long as the
	// machine's load makes it.
	lastSlotAfter := time.Since(live)
	witnessed("the first run's log is witnessed")
	first.stop()
	chainFile := filepath.Join(dir, ".run", "chain", "chain.json")
	firstChain, firstErr := os.ReadFile(chainFile) // checked after the second run

	second := startDaemonIn(t, checkout, bin, env, args...)
	waitCount(second, "second run serves", func(int) bool { return true })
	// New attestations, from slots past those the first run indexed (a
	// replayed chain would be below them for as long as the first run
	// took to reach them).
	after, took := waitCount(second, "new attestations past the first run's last slot",
		func(n int) bool { return n > before && indexedSlot(base) > lastSlot })
	if took >= lastSlotAfter {
		t.Fatalf("new attestations past slot %d %s after the second start, no sooner than the first run's chain reached it (%s): the chain was replayed, not continued",
			lastSlot, took.Round(time.Millisecond), lastSlotAfter.Round(time.Millisecond))
	}
	// The witness kept its key and the size it cosigned: it goes on
	// cosigning the same log.
	witnessed("the second run's log is witnessed")
	testenv.Must(t, firstErr, "the first run keeps its chain")
	var saved struct {
		Seed int64
		Slot uint64
	}
	testenv.Must(t, json.Unmarshal(firstChain, &saved), "decode %s", chainFile)
	logs := second.output.String()
	if !strings.Contains(logs, "devnet continues its saved chain") {
		t.Fatalf("the second run did not continue the kept chain:\n%s", logs)
	}
	b, err := os.ReadFile(chainFile)
	testenv.Must(t, err, "read kept chain")
	var now struct {
		Seed int64
		Slot uint64
	}
	testenv.Must(t, json.Unmarshal(b, &now), "decode %s", chainFile)
	if now.Seed != saved.Seed || now.Slot <= saved.Slot {
		t.Fatalf("kept chain seed %d slot %d after the second run; the first left seed %d slot %d", now.Seed, now.Slot, saved.Seed, saved.Slot)
	}
	t.Logf("first run: %d attestations at slot %d; second run: %d", before, saved.Slot, after)
}

// goToolEnv is the Go settings a child process needs to run `go tool`
// with this test's module and build caches (its HOME is a scratch one).
func goToolEnv(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GOTOOLCHAIN", "GOFLAGS").Output()
	testenv.Must(t, err, "go env")
	names := []string{"GOCACHE", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GOTOOLCHAIN", "GOFLAGS"}
	var env []string
	for i, v := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if i < len(names) {
			env = append(env, names[i]+"="+v)
		}
	}
	return env
}

// rowCounts counts indexed rows and reads the indexer's checkpoint slot.
func rowCounts(t *testing.T, dbURL string) (atts, agents, slot int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	testenv.Must(t, err, "connect")
	defer conn.Close(ctx)
	testenv.Must(t, conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM attestations), (SELECT count(*) FROM agents),
		COALESCE((SELECT slot FROM checkpoints WHERE name = 'indexer'), -1)`).Scan(&atts, &agents, &slot), "count rows")
	return atts, agents, slot
}

// unfinalizedRows counts the attestation, agent and agent event rows not
// finalized yet.
func unfinalizedRows(t *testing.T, dbURL string) (n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	testenv.Must(t, err, "connect")
	defer conn.Close(ctx)
	testenv.Must(t, conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM attestations WHERE NOT finalized)
		+ (SELECT count(*) FROM agents WHERE NOT finalized) + (SELECT count(*) FROM agent_events WHERE NOT finalized)`).Scan(&n), "count unfinalized rows")
	return n
}

// TestHealthOnAnotherChain points an API node and an indexer at a second
// simulator (another genesis) after the database was indexed from a first
// one: /health is degraded and names both genesis hashes and the flag,
// `attestd index` refuses with the same and writes nothing; `attestd index
// --start-over` then indexes the second chain, keeping the first's rows.
func TestHealthOnAnotherChain(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	_, envA := startChain(t, devnet.Config{Seed: 11, Agents: 2, Attestations: 40, SlotInterval: 50 * time.Millisecond})
	chainB, envB := startChain(t, devnet.Config{Seed: 12, Agents: 1, Attestations: 25, SlotInterval: 50 * time.Millisecond})
	redisURL, prefix := testenv.Redis(t)
	db := testenv.Database(t)
	common := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + db,
		"REDIS_URL=" + redisURL, "ATTESTD_REDIS_PREFIX=" + prefix, "ATTESTD_METRICS_ADDR=", "ATTESTD_INDEXER_METRICS_ADDR=",
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_TRUSTED_PROXIES=127.0.0.1/32"}
	onA, onB := append(append([]string{}, common...), envA...), append(append([]string{}, common...), envB...)
	runCmd(t, bin, onA, "migrate")
	nodeA := serveNode(t, bin, onA)
	ixA := startDaemon(t, bin, onA, "index")
	waitHealth(t, nodeA, "ok on the first chain", func(h health) bool { return h.Status == "ok" && h.Indexer.Synced })
	testenv.WaitForState(t, "the first chain's 40 attestations indexed", testenv.Patience, func() (bool, string) {
		a, _, _ := rowCounts(t, db)
		return a >= 40, fmt.Sprintf("%d attestations", a)
	})
	// Finality: the first chain's rows are final before the switch.
	testenv.WaitForState(t, "the first chain's rows finalized", testenv.Patience, func() (bool, string) {
		n := unfinalizedRows(t, db)
		return n == 0, fmt.Sprintf("%d rows not finalized", n)
	})
	ixA.stop()
	atts, agents, slot := rowCounts(t, db)

	ga, gb := genesisHash(t, envA), genesisHash(t, envB)
	nodeB := serveNode(t, bin, onB)
	h := waitHealth(t, nodeB, "degraded on another chain", func(h health) bool {
		return h.Status == "degraded" && !h.Indexer.Synced && hasReason(h, ga) && hasReason(h, gb) && hasReason(h, "--start-over")
	})
	t.Logf("/health on another chain: %v", h.Reasons)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "index")
	cmd.Env = onB
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("attestd index on another chain exited 0:\n%s", out)
	}
	for _, sub := range []string{ga, gb, "--start-over"} {
		if !strings.Contains(string(out), sub) {
			t.Fatalf("attestd index's error does not name %q:\n%s", sub, out)
		}
	}
	if a2, g2, s2 := rowCounts(t, db); a2 != atts || g2 != agents || s2 != slot {
		t.Fatalf("rows or checkpoint changed on another chain: %d/%d/%d, were %d/%d/%d", a2, g2, s2, atts, agents, slot)
	}

	startDaemon(t, bin, onB, "index", "--start-over")
	waitHealth(t, nodeB, "ok after starting over", func(h health) bool { return h.Status == "ok" && h.Indexer.Synced })
	testenv.WaitForState(t, "after --start-over, the first chain's attestations and the second's 25", testenv.Patience, func() (bool, string) {
		a, _, _ := rowCounts(t, db)
		return a >= atts+25, fmt.Sprintf("%d attestations, want %d and 25", a, atts)
	})
	_ = chainB
}

func hasReason(h health, sub string) bool {
	for _, r := range h.Reasons {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

// genesisHash asks the chain named in env (ATTESTD_SOLANA_RPC_URL=...) for
// its genesis hash.
func genesisHash(t *testing.T, env []string) string {
	t.Helper()
	var url string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "ATTESTD_SOLANA_RPC_URL="); ok {
			url = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := rpc.New(url)
	defer cl.Close()
	h, err := cl.GetGenesisHash(ctx)
	testenv.Must(t, err, "getGenesisHash %s", url)
	return h.String()
}
