package deploy_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/translog"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/ratelimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/mod/sumdb/note"
)

// TestAnonymousReadersCannotFillTheStateRedis: two nodes share one Redis
// for state and cache, as a deployment without ATTESTD_CACHE_REDIS_URL
// does, with noeviction and little room left (a few MB: the memory
// scaled down). Anonymous clients from hundreds of loopback addresses ask
// for distinct pages, each once at each node (the second miss is the one
// admission stores), many times the room. With the cache's budget (scaled
// down with the room), limits, sessions, webhook fan-out and payment
// claims are written as before, the limiter decides in Redis, /health
// says ok with the cache full. The same flood without a budget (the
// control) fills the server and state writes fail: the flood is past
// the point where a node without the budget fails. Run for list pages
// and for the log's entry bundles and tiles.
func TestAnonymousReadersCannotFillTheStateRedis(t *testing.T) {
	t.Parallel()
	lists := func(t *testing.T, env *apptest.Env) []string {
		var paths []string
		for off := range 300 {
			paths = append(paths, fmt.Sprintf("/attestations?limit=100&offset=%d", off))
		}
		return paths
	}
	logPaths := func(t *testing.T, env *apptest.Env) []string {
		var paths []string
		for i := range int64(8192 / 256) {
			paths = append(paths, fmt.Sprintf("^/log/tile/entries/%03d", i), fmt.Sprintf("^/log/tile/0/%03d", i))
		}
		return paths
	}
	// The room is well under what each flood stores without a budget
	// (about 20 MB of pages; 6 MB of tiles and bundles), the budget well
	// under the room, which also holds the clients' buffers (Redis counts
	// them: about 800 KB after a flood of large values).
	for _, tc := range []struct {
		name         string
		attestations int
		log          bool
		paths        func(*testing.T, *apptest.Env) []string
		room, budget int64
	}{
		{"list pages", 400, false, lists, 3 << 20, 1 << 20},
		{"log bundles", 8192, true, logPaths, 3 << 20, 1 << 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, budgeted := range []bool{true, false} {
				name := "budget"
				if !budgeted {
					name = "no budget (the control)"
				}
				t.Run(name, func(t *testing.T) {
					s := newSharedRedisStack(t, tc.attestations, tc.log)
					paths := tc.paths(t, s.env)
					room, maxBytes := tc.room, tc.budget
					if !budgeted {
						maxBytes = -1
					}
					nodes := s.startNodes(t, maxBytes)
					s.leaveRoom(t, room)
					saidFull := watchFull(nodes)
					stored := flood(t, nodes, paths)
					full := saidFull()
					used, _ := memory(t, s.rdb)
					refused := oomErrors(t, s.rdb)
					t.Logf("%d distinct answers, %d KB sent; Redis uses %d KB of %d KB allowed and refused %d writes for memory",
						len(paths), stored>>10, used>>10, (s.base+room)>>10, refused)
					if !budgeted {
						// A node without the budget writes until Redis refuses:
						// from then on every write is at risk, the state's too.
						if refused == 0 {
							t.Fatal("without a budget the flood never filled the server: the test proves nothing")
						}
						return
					}
					if refused != 0 {
						t.Errorf("Redis refused %d writes for memory: the budget did not keep the cache within the room", refused)
					}
					for _, f := range stateWrites(t, s.rdb, s.env.Prefix) {
						t.Error(f)
					}
					refusedWrites := 0.0
					for i, n := range nodes {
						// A full class refuses until its window ends (10 s for
						// per-epoch lists): a loaded machine's flood outlasts
						// it, so "full" is what /health said while the flood
						// ran, "ok" what it says after.
						h := health(t, n)
						if h.Status != "ok" || h.Redis != "ok" || !full[i] {
							t.Errorf("node %d /health: status %s, redis %s, said cache full during the flood: %v; want ok, ok, true (%v)", i, h.Status, h.Redis, full[i], h.Reasons)
						}
						if n.Cache.Degraded() {
							t.Errorf("node %d marked Redis down", i)
						}
						refusedWrites += testenv.MetricSum(t, n.Reg, "attestd_cache_redis_writes_total", "outcome", "refused")
					}
					if refusedWrites == 0 {
						t.Error("no node refused a write: the flood never reached the budget")
					}
					if s.limiter.Degraded() {
						t.Error("the limiter fell back to deciding locally")
					}
				})
			}
		})
	}
}

// sharedRedisStack is a database and one Redis for state and cache.
type sharedRedisStack struct {
	env     *apptest.Env
	rdb     *redis.Client
	limiter *ratelimit.Limiter
	log     *translog.Config
	base    int64 // used_memory before the flood
}

func newSharedRedisStack(t *testing.T, attestations int, withLog bool) *sharedRedisStack {
	t.Helper()
	r, err := devstack.StartRedisWith(context.Background(), testenv.TempDir(t, "attestd-shared-"), 0, devstack.StateRedisArgs...)
	testenv.Must(t, err, "redis")
	t.Cleanup(r.Stop)
	s := &sharedRedisStack{rdb: apptest.NewRedis(t, r.URL)}
	s.env = apptest.NewEnvOn(t, testenv.Database(t), r.URL, "sh:", apptest.Options{Agents: 3, Attestations: attestations})
	s.limiter = s.env.NewLimiter(t, 1000)
	if withLog {
		skey, _, err := note.GenerateKey(rand.Reader, "budget.test/log")
		testenv.Must(t, err, "key")
		key, err := translog.ParseKey(skey)
		testenv.Must(t, err, "parse key")
		s.log = &translog.Config{Key: key}
		a, err := translog.NewAppender(translog.AppenderDeps{Store: s.env.Store, Config: *s.log, Logger: apptest.Logger()})
		testenv.Must(t, err, "appender")
		for {
			res, err := s.env.Store.LogAppend(context.Background(), 5000)
			testenv.Must(t, err, "append")
			if res.Leaves == 0 {
				break
			}
		}
		_, _, err = a.SignCheckpoint(context.Background())
		testenv.Must(t, err, "sign")
	}
	return s
}

// startNodes starts two nodes behind the stack's limiter, with the given
// cache budget.
func (s *sharedRedisStack) startNodes(t *testing.T, maxBytes int64) []*apptest.Node {
	t.Helper()
	var nodes []*apptest.Node
	for range 2 {
		var more func(*app.API)
		n := s.env.StartNode(t, apptest.NodeOptions{CacheMaxBytes: maxBytes,
			Configure: func(d *app.Deps) {
				d.Middleware = append(d.Middleware, s.limiter.Middleware())
				if s.log != nil {
					srv := translog.NewServer(translog.ServerDeps{Store: d.Store, Cache: d.Cache, Config: *s.log,
						Logger: d.Logger, Refresh: 50 * time.Millisecond})
					srv.Start(t.Context())
					d.Unlimited = append(d.Unlimited, srv.OriginRoutes()...)
					more = func(api *app.API) { srv.Routes(api) }
				}
			},
			Routes: func(api *app.API) {
				if more != nil {
					more(api)
				}
			}})
		nodes = append(nodes, n)
	}
	if s.log != nil {
		for _, n := range nodes {
			testenv.WaitForState(t, "the node serves the log", testenv.Patience, func() (bool, string) {
				res, err := http.Get(n.Root + "/log/checkpoint")
				if err != nil {
					return false, err.Error()
				}
				res.Body.Close()
				return res.StatusCode == 200, res.Status
			})
		}
	}
	return nodes
}

// leaveRoom sets the server's maxmemory to what it uses now plus room.
func (s *sharedRedisStack) leaveRoom(t *testing.T, room int64) {
	t.Helper()
	s.base, _ = memory(t, s.rdb)
	testenv.Must(t, s.rdb.ConfigSet(context.Background(), "maxmemory", fmt.Sprint(s.base+room)).Err(), "maxmemory")
}

// flood asks every path once at each node, from a loopback address of
// its own per path and node, 16 at a time, and returns the bytes answered.
func flood(t *testing.T, nodes []*apptest.Node, paths []string) int64 {
	t.Helper()
	var mu sync.Mutex
	var total int64
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, p := range paths {
		for j, n := range nodes {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				target := n.URL + p
				if rest, ok := strings.CutPrefix(p, "^"); ok {
					target = n.Root + rest
				}
				addr := fmt.Sprintf("127.%d.%d.%d", 1+j, 1+i/250, 1+i%250)
				body, status := fetchFrom(addr, target)
				mu.Lock()
				total += int64(len(body))
				mu.Unlock()
				if status != http.StatusOK {
					t.Errorf("GET %s from %s: %d %.200s", p, addr, status, body)
				}
			}()
		}
	}
	wg.Wait()
	return total
}

// fetchFrom makes one request from a given loopback source address (a
// client of its own for the per-IP limit), asking for gzip as browsers do.
func fetchFrom(src, url string) ([]byte, int) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	res, err := c.Get(url)
	if err != nil {
		return []byte(err.Error()), 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return b, res.StatusCode
}

// stateWrites writes state as each feature does and returns what failed:
// the limiter deciding in Redis (not its local fallback), webhook fan-out
// (the queue's streams), a sign-in session and an x402 payment claim.
func stateWrites(t *testing.T, rdb *redis.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var failed []string
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 100, Window: time.Minute, KeyPrefix: prefix + "rl2:", Timeout: 3 * time.Second},
		prometheus.NewRegistry(), apptest.Logger())
	testenv.Must(t, err, "limiter")
	defer lim.Close()
	for i := range 20 {
		if d, err := lim.Allow(ctx, fmt.Sprintf("198.51.100.%d", i)); err != nil || d.Local {
			failed = append(failed, fmt.Sprintf("limit: decided locally (%v)", err))
			break
		}
	}
	q := queue.New(rdb, prefix+"st:", 2)
	if _, err := q.EnsureGroups(ctx); err != nil {
		failed = append(failed, "webhook queue groups: "+err.Error())
	}
	body := strings.Repeat(`{"attestation":"x"}`, 50)
	for i := range 20 {
		if err := q.Publish(ctx, []queue.Event{{ID: int64(i + 1), Type: "attestation.created", Created: time.Now().UnixMilli(), Body: body}}); err != nil {
			failed = append(failed, "webhook fan-out: "+err.Error())
			break
		}
	}
	for i := range 20 {
		if err := rdb.Set(ctx, fmt.Sprintf("%sweb:session:%d", prefix, i), strings.Repeat("s", 200), time.Hour).Err(); err != nil {
			failed = append(failed, "session: "+err.Error())
			break
		}
	}
	for i := range 20 {
		if err := rdb.SetNX(ctx, fmt.Sprintf("%sx402:claim:%d", prefix, i), "owner", 10*time.Minute).Err(); err != nil {
			failed = append(failed, "payment claim: "+err.Error())
			break
		}
	}
	return failed
}

// oomErrors is how many commands the server refused for lack of memory.
func oomErrors(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "errorstats").Result()
	testenv.Must(t, err, "info errorstats")
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "errorstat_OOM:count="); ok {
			var n int64
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// health reads a node's /health.
// watchFull asks each node's /health every 50 ms until stopped; stop
// reports, per node, whether it ever said "cache":"full" with status and
// Redis ok.
func watchFull(nodes []*apptest.Node) (stop func() []bool) {
	saw := make([]bool, len(nodes))
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if res, err := http.Get(n.URL + "/health"); err == nil {
					var h struct{ Status, Redis, Cache string }
					if json.NewDecoder(res.Body).Decode(&h) == nil && h.Status == "ok" && h.Redis == "ok" && h.Cache == "full" {
						saw[i] = true
					}
					res.Body.Close()
				}
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return func() []bool { close(done); wg.Wait(); return saw }
}

func health(t *testing.T, n *apptest.Node) (h struct {
	Status, Redis, Cache string
	Reasons              []string
}) {
	t.Helper()
	res, err := http.Get(n.URL + "/health")
	testenv.Must(t, err, "health")
	defer res.Body.Close()
	testenv.Must(t, json.NewDecoder(res.Body).Decode(&h), "decode health")
	return h
}
