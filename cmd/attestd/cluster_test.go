package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// runCmd runs one attestd subcommand to completion and returns its stdout.
func runCmd(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("attestd %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// daemon is an attestd process started by a test.
type daemon struct {
	cmd    *exec.Cmd
	done   chan struct{}
	output *testenv.Output
}

// startDaemon starts `attestd args...`; it gets SIGTERM when the test ends
// (or at stop).
func startDaemon(t *testing.T, bin string, env []string, args ...string) *daemon {
	t.Helper()
	return startDaemonIn(t, "", bin, env, args...)
}

// startDaemonIn is startDaemon with dir as the working directory.
func startDaemonIn(t *testing.T, dir, bin string, env []string, args ...string) *daemon {
	t.Helper()
	// A node started without an address takes 127.0.0.1:8080, where
	// make run serves: the test would fail whenever one runs.
	if len(args) > 0 && (args[0] == "serve" || args[0] == "local") &&
		!slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "ATTESTD_HTTP_ADDR=") }) {
		t.Fatalf("attestd %s started without ATTESTD_HTTP_ADDR: it would bind 127.0.0.1:8080; give it a free port", args[0])
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	d := &daemon{cmd: cmd, done: make(chan struct{}), output: &testenv.Output{}}
	cmd.Stdout, cmd.Stderr = d.output, d.output
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	testenv.Must(t, cmd.Start(), "start attestd %s", strings.Join(args, " "))
	go func() { _ = cmd.Wait(); close(d.done) }()
	t.Cleanup(d.stop)
	return d
}

// waitFor is testenv.WaitForState for a condition on what the daemon
// serves, asked at most once per every (it goes through the daemon's
// rate limit): the wait also ends when the daemon exits, and either
// failure shows its output. It returns how long the wait took.
func (d *daemon) waitFor(t *testing.T, what string, every time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	held := false
	defer func() {
		if !held {
			t.Logf("attestd %s output:\n%s", strings.Join(d.cmd.Args[1:], " "), d.output.String())
		}
	}()
	took := testenv.WaitForState(t, what, testenv.Patience, testenv.Every(every, func() (bool, string) {
		select {
		case <-d.done:
			t.Fatalf("%s: attestd %s exited", what, strings.Join(d.cmd.Args[1:], " "))
		default:
		}
		return cond()
	}))
	held = true
	return took
}

// stop sends SIGTERM twice (the second ends an API node's drain) and
// waits up to 15 s before killing the process.
func (d *daemon) stop() {
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}

// serveNode starts `attestd serve` on a free loopback port and waits until
// /health answers; the process gets SIGTERM when the test ends.
func serveNode(t *testing.T, bin string, env []string) string {
	t.Helper()
	base, _ := serveProcess(t, bin, env)
	return base
}

// serveProcess is serveNode that also returns the process id.
func serveProcess(t *testing.T, bin string, env []string) (string, int) {
	t.Helper()
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	d := startDaemon(t, bin, append(env, "ATTESTD_HTTP_ADDR="+addr), "serve")
	base := "http://" + addr + "/api/v1"
	d.waitFor(t, "attestd serve healthy", 50*time.Millisecond, func() (bool, string) {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return base, d.cmd.Process.Pid
}

// startChain starts a chain simulator on free loopback ports (slots pass
// only when the test advances them) and returns it with the environment
// that points attestd at it.
func startChain(t *testing.T, cfg devnet.Config) (*devnet.Chain, []string) {
	t.Helper()
	if cfg.SlotInterval == 0 {
		cfg.SlotInterval = -1
	}
	if cfg.FinalityDepth == 0 {
		cfg.FinalityDepth = 8
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := devnet.Start(ctx, cfg)
	testenv.Must(t, err, "start devnet")
	t.Cleanup(c.Close)
	return c, []string{"ATTESTD_SOLANA_RPC_URL=" + c.RPCURL(), "ATTESTD_SOLANA_WS_URL=" + c.WSURL(),
		"ATTESTD_INDEXER_METRICS_ADDR=", "ATTESTD_INDEXER_POLL_INTERVAL=250ms"}
}

// health is the part of /health these tests read.
type health struct {
	Status  string
	Redis   string
	Reasons []string
	Indexer struct{ Synced bool }
	Chain   struct{ Reachable bool }
	Log     *struct {
		Quorum      int
		WitnessedBy []string
	}
}

// healthPolls numbers the polls of /health: each comes from its own client
// address, so polling never spends a tested client's rate limit.
var healthPolls atomic.Uint32

// waitHealth polls a node's /health until cond holds (30 s at most) and
// returns the last answer.
func waitHealth(t *testing.T, node, what string, cond func(h health) bool) health {
	t.Helper()
	var h health
	testenv.WaitForState(t, what, testenv.Patience, testenv.Every(100*time.Millisecond, func() (bool, string) {
		h = health{}
		n := healthPolls.Add(1)
		status := get(t, node+"/health", fmt.Sprintf("198.18.%d.%d", n/250%250, n%250+1), "", &h)
		return status == http.StatusOK && cond(h), fmt.Sprintf("/health %d %+v", status, h)
	}))
	return h
}

// get sends a GET as the client ip (through the trusted loopback proxy)
// and decodes the JSON body into out when out is not nil.
func get(t *testing.T, url, ip, key string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	testenv.Must(t, err, "request")
	req.Header.Set("X-Forwarded-For", ip)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	testenv.Must(t, err, "GET %s", url)
	defer resp.Body.Close()
	if out != nil {
		testenv.Must(t, json.NewDecoder(resp.Body).Decode(out), "decode %s", url)
	}
	return resp.StatusCode
}

// TestServeOnRedisCluster runs the built binary the way an operator with a
// Redis Cluster would (ATTESTD_REDIS_CLUSTER=on, REDIS_URL naming the seed
// nodes): seed, two serving nodes, a second write seen by both, the rate
// limit held exactly across the two nodes, and a key revoked from the CLI
// refused by both, with the cache's keys spread over the masters.
func TestServeOnRedisCluster(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	cl := testenv.OwnRedisCluster(t, 3)
	prefix := testenv.Name("t") + ":"
	const limit = 30
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		"DATABASE_URL=" + testenv.Database(t),
		"REDIS_URL=" + cl.URL, "ATTESTD_REDIS_CLUSTER=on", "ATTESTD_REDIS_PREFIX=" + prefix,
		"ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn",
		fmt.Sprintf("ATTESTD_RATE_LIMIT=%d", limit), "ATTESTD_TRUSTED_PROXIES=127.0.0.1/32",
		// Redis decides, even when a loaded machine stalls a round trip
		// beyond the production 75 ms (the local fallback is not under test).
		"ATTESTD_RATE_REDIS_TIMEOUT=3s",
	}
	// A chain and an indexer that follows it: with both up, the fleet is
	// healthy (without them /health rightly says degraded).
	_, chainEnv := startChain(t, devnet.Config{})
	env = append(env, chainEnv...)
	runCmd(t, bin, env, "migrate")
	runCmd(t, bin, env, "seed", "--agents", "3", "--attestations", "40")
	startDaemon(t, bin, env, "index")
	nodes := []string{serveNode(t, bin, env), serveNode(t, bin, env)}

	type list struct {
		Pagination struct{ Total int } `json:"pagination"`
	}
	total := func(node, ip string) int {
		var l list
		if s := get(t, node+"/attestations?limit=5", ip, "", &l); s != http.StatusOK {
			t.Fatalf("%s: list status %d", node, s)
		}
		return l.Pagination.Total
	}
	for i, n := range nodes {
		waitHealth(t, n, fmt.Sprintf("node %d ok on a healthy cluster", i), func(h health) bool {
			return h.Status == "ok" && h.Redis == "ok" && len(h.Reasons) == 0
		})
		if got := total(n, "203.0.113.1"); got != 40 {
			t.Fatalf("node %d: total %d, want 40", i, got)
		}
	}

	// A second write (its epoch bump goes through the cluster) is seen by
	// both nodes, whose first answer is cached under the old epoch.
	runCmd(t, bin, env, "seed", "--agents", "1", "--attestations", "10", "--seed", "2")
	for i, n := range nodes {
		testenv.WaitForState(t, fmt.Sprintf("node %d sees the write", i), testenv.Patience, func() (bool, string) {
			got := total(n, "203.0.113.1")
			return got == 50, fmt.Sprintf("total %d, want 50", got)
		})
	}

	// The limit holds for the fleet: one client over both nodes.
	accepted := 0
	for i := range limit + 15 {
		var body struct{ Error struct{ Code string } }
		switch s := get(t, nodes[i%2]+"/stats", "203.0.113.99", "", &body); s {
		case http.StatusOK:
			accepted++
		case http.StatusTooManyRequests:
			if body.Error.Code != "RATE_LIMITED" {
				t.Fatalf("429 with code %q", body.Error.Code)
			}
		default:
			t.Fatalf("request %d: status %d", i, s)
		}
	}
	if accepted != limit {
		t.Fatalf("accepted %d of %d over two nodes, want exactly %d", accepted, limit+15, limit)
	}

	// A key revoked from the CLI is refused by both nodes within 5 s.
	key := strings.TrimSpace(runCmd(t, bin, env, "keys", "create", "--account", "acme"))
	for i, n := range nodes {
		if s := get(t, n+"/keys", "203.0.113.2", key, nil); s != http.StatusOK {
			t.Fatalf("node %d: GET /keys with a fresh key: %d", i, s)
		}
	}
	runCmd(t, bin, env, "keys", "revoke", key[len("atst_"):len("atst_")+8])
	for i, n := range nodes {
		testenv.WaitFor(t, fmt.Sprintf("node %d refuses the revoked key", i), 5*time.Second, func() bool {
			return get(t, n+"/keys", "203.0.113.2", key, nil) == http.StatusUnauthorized
		})
	}

	// The fleet's keys live on more than one master.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	holding := 0
	for _, m := range cl.Nodes {
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr})
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		rdb.Close()
		testenv.Must(t, err, "keys on %s", m.Addr)
		if len(keys) > 0 {
			holding++
		}
	}
	if holding < 2 {
		t.Fatalf("attestd keys found on %d of 3 masters, want them spread", holding)
	}
}

// TestRedisModeMismatch: a node whose ATTESTD_REDIS_CLUSTER contradicts
// the server refuses to start and says what to set, rather than run with
// MOVED errors (cache misses everywhere, a per-node rate limit).
func TestRedisModeMismatch(t *testing.T) {
	t.Parallel()
	bin := testenv.BuildAttestd(t)
	cl := testenv.OwnRedisCluster(t, 2)
	standalone, _ := testenv.Redis(t)
	db := testenv.Database(t)
	// A current schema, so that serve gets as far as Redis.
	runCmd(t, bin, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + db}, "migrate")
	cases := []struct {
		name, url, mode, want string
	}{
		{"cluster node, cluster off", "redis://" + cl.Nodes[1].Addr, "off", "set ATTESTD_REDIS_CLUSTER=on"},
		{"standalone, cluster on", standalone, "on", "standalone Redis but ATTESTD_REDIS_CLUSTER=on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, err := devstack.FreePort()
			testenv.Must(t, err, "free port")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DATABASE_URL=" + db,
				"REDIS_URL=" + tc.url, "ATTESTD_REDIS_CLUSTER=" + tc.mode, "ATTESTD_METRICS_ADDR=",
				fmt.Sprintf("ATTESTD_HTTP_ADDR=127.0.0.1:%d", port)}
			out, err := cmd.CombinedOutput()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("serve did not fail at start (err %v, ctx %v):\n%s", err, ctx.Err(), out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("serve failed without saying %q:\n%s", tc.want, out)
			}
		})
	}
}
