package apptest

import (
	"fmt"

	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/tracing"

	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Env is a database and Redis prefix that several nodes can share.
type Env struct {
	DatabaseURL string
	RedisURL    string
	Prefix      string
	Store       *store.Store // a writer: its cache bumps the epoch
	Seeded      seed.Result
}

// Options configure NewEnv.
type Options struct {
	Agents       int // seed this many agents (0: no seed)
	Attestations int
	SeedNow      time.Time // default time.Now()
}

// NewEnv makes a migrated database and a Redis prefix, seeded per opt.
func NewEnv(t testing.TB, opt Options) *Env {
	t.Helper()
	url, prefix := testenv.Redis(t)
	return NewEnvOn(t, testenv.Database(t), url, prefix, opt)
}

// NewEnvOn is NewEnv on given servers (tests that stop a server).
func NewEnvOn(t testing.TB, databaseURL, redisURL, prefix string, opt Options) *Env {
	t.Helper()
	ctx := context.Background()
	// The environment's own store seeds and sets up: a minute per statement,
	// not a node's 5 s (seeding thousands of rows on two cores shared with
	// the rest of the suite under -race passed 5 s). Nodes open their own.
	st, err := store.Open(ctx, databaseURL, store.Options{MaxConns: 8, QueryTimeout: time.Minute})
	testenv.Must(t, err, "open store")
	t.Cleanup(st.Close)
	_, err = st.Migrate(ctx)
	testenv.Must(t, err, "migrate")
	rdb := NewRedis(t, redisURL)
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, SkipSubscriber: true, Logger: Logger()})
	testenv.Must(t, err, "writer cache")
	t.Cleanup(c.Close)
	st.SetNotifier(c)
	e := &Env{DatabaseURL: databaseURL, RedisURL: redisURL, Prefix: prefix, Store: st}
	if opt.Agents > 0 {
		e.Seeded, err = seed.Run(ctx, st, seed.Options{Agents: opt.Agents, Attestations: opt.Attestations, Seed: 7,
			Now: opt.SeedNow, Logger: Logger()})
		testenv.Must(t, err, "seed")
	}
	return e
}

// NewRedis returns a client for url with short timeouts, closed at cleanup.
func NewRedis(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse redis url")
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	opt.MaxRetries = 0
	rdb := redis.NewClient(opt)
	tracing.InstrumentRedis(rdb) // as serve's clients, when a test turned tracing on
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func init() { cache.RouteRedisLogs(Logger()) }

// Logger is the logger of the nodes and services tests start: silent,
// or everything down to debug on stderr when ATTESTD_TEST_LOGS is set.
func Logger() *slog.Logger {
	if os.Getenv("ATTESTD_TEST_LOGS") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// NewLimiter returns a per-IP rate limiter over e's Redis that accepts
// limit requests per minute, closed at cleanup. Its Redis round-trip bound
// is 3 s instead of the production 75 ms: tests of the wiring expect Redis
// to decide, not the local fallback that a round trip stalled on a loaded
// machine (under -race, beside other packages) would switch to.
func (e *Env) NewLimiter(t testing.TB, limit int) *ratelimit.Limiter {
	t.Helper()
	opt, err := redis.ParseURL(e.RedisURL)
	testenv.Must(t, err, "parse redis url")
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 3*time.Second, 3*time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	l, err := ratelimit.New(rdb, ratelimit.Config{Limit: limit, Window: time.Minute,
		KeyPrefix: e.Prefix + "rl:", Timeout: 3 * time.Second}, prometheus.NewRegistry(), Logger())
	testenv.Must(t, err, "rate limiter")
	t.Cleanup(l.Close)
	return l
}

// Node is a running API node.
type Node struct {
	URL   string // base URL including /api/v1
	Root  string // scheme://host:port
	API   *app.API
	Store *store.Store
	Cache *cache.Cache
	Redis *redis.Client
	Reg   *prometheus.Registry

	prefix string
}

// NodeOptions adjust a node.
type NodeOptions struct {
	CacheDisabled bool
	LocalBytes    int
	// CacheMaxBytes is the cache's Redis budget (0: the default; -1:
	// unbounded).
	CacheMaxBytes int64
	// Configure may change the dependencies before the app is built
	// (add middleware, routes, health contributors).
	Configure func(*app.Deps)
	// Routes may add routes to the built app.
	Routes func(*app.API)
	// Listener, when set, is where the node serves (a test that must know
	// the node's address before its routes are built binds it first).
	Listener net.Listener
}

// StartNode starts an API node over e's database and Redis prefix.
func (e *Env) StartNode(t testing.TB, opt NodeOptions) *Node {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, e.DatabaseURL, store.Options{MaxConns: 8, Lazy: true})
	testenv.Must(t, err, "open store")
	rdb := NewRedis(t, e.RedisURL)
	reg := prometheus.NewRegistry()
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: e.Prefix, Disabled: opt.CacheDisabled, LocalBytes: opt.LocalBytes, MaxBytes: opt.CacheMaxBytes,
		Registerer: reg, Logger: Logger(), RedisTimeout: 150 * time.Millisecond, PollInterval: 200 * time.Millisecond})
	testenv.Must(t, err, "cache")
	st.SetNotifier(c)
	deps := app.Deps{Store: st, Cache: c, Logger: Logger(), Registerer: reg}
	if opt.Configure != nil {
		opt.Configure(&deps)
	}
	a := app.New(deps)
	if opt.Routes != nil {
		opt.Routes(a)
	}
	ln := opt.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		testenv.Must(t, err, "listen")
	}
	go func() { _ = a.Serve(ln) }()
	t.Cleanup(func() {
		_ = a.Fiber().ShutdownWithTimeout(5 * time.Second)
		c.Close()
		st.Close()
	})
	root := "http://" + ln.Addr().String()
	nodeHosts.Store(ln.Addr().String(), true)
	t.Cleanup(func() { nodeHosts.Delete(ln.Addr().String()) })
	return &Node{URL: root + httpapi.Prefix, Root: root, API: a, Store: st, Cache: c, Redis: rdb, Reg: reg, prefix: e.Prefix}
}

// Fiber returns the node's Fiber app (for app.Test-style calls).
func (n *Node) Fiber() *fiber.App { return n.API.Fiber() }

// httpClient is shared by all nodes' test clients.
var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// SettleEpoch waits (up to 5 s) until the node has heard every index epoch
// bump made so far, so a test's next read sees the writes it just made
// under the current epoch. In production the announcement arrives within
// milliseconds; tests that compare two cached answers need it settled.
func (n *Node) SettleEpoch(t testing.TB) {
	t.Helper()
	key := n.prefix + "epoch"
	testenv.WaitForState(t, "the node's epoch settled", testenv.Patience, func() (bool, string) {
		want, err := n.Redis.Get(context.Background(), key).Uint64()
		if err != nil && err != redis.Nil {
			t.Fatalf("read epoch: %v", err)
		}
		e := n.Cache.Epoch()
		return e >= want, fmt.Sprintf("node epoch %d, announced %d", e, want)
	})
}
