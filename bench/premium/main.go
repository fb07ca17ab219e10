// Command premium-bench measures the premium routes on loopback, server
// side: bulk verify of 1000 ids, the full history of 1000 and the forensic
// report of an agent with 100,000 attestations, cold and cached.
//
//	go run ./bench/premium [-n 50] [-cold 15] [-attestations 100000]
//
// It starts a throwaway Postgres and Redis (devstack) unless DATABASE_URL
// (an admin URL: a database is created on that server) and REDIS_URL are
// set, seeds one agent with seed.Run, then serves three in-process API
// nodes on 127.0.0.1: cache on; cache off; cache off with the signature
// memo off. Requests are sequential (one in flight), so the numbers are
// latencies, not throughput. Server-side time is taken by a middleware
// around the route (parsing, store, verification, encoding; not the socket
// write); the client-side round trip is shown alongside.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func main() {
	n := flag.Int("n", 50, "requests per warm scenario")
	cold := flag.Int("cold", 15, "requests per uncached forensic-report scenario")
	atts := flag.Int("attestations", 100_000, "attestations of the one seeded agent")
	gz := flag.Bool("gzip", true, "accept gzip answers (as Go's HTTP client does by default); false asks for plain JSON")
	flag.Parse()
	if err := run(context.Background(), *n, *cold, *atts, *gz); err != nil {
		fmt.Fprintln(os.Stderr, "premium-bench:", err)
		os.Exit(1)
	}
}

// recorder keeps server-side durations of the current scenario.
type recorder struct {
	mu  sync.Mutex
	now []time.Duration
}

func (r *recorder) add(d time.Duration) {
	r.mu.Lock()
	r.now = append(r.now, d)
	r.mu.Unlock()
}

func (r *recorder) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.now
	r.now = nil
	return out
}

type node struct {
	name string
	url  string
	rec  *recorder
}

func run(ctx context.Context, n, cold, atts int, gz bool) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteRedisLogs(quiet)
	rg, err := openRig(ctx, atts, quiet)
	if err != nil {
		return err
	}
	defer rg.close()
	cached, err := rg.startNode(ctx, "cache on", false, 0)
	if err != nil {
		return err
	}
	uncached, err := rg.startNode(ctx, "cache off", true, 0)
	if err != nil {
		return err
	}
	bare, err := rg.startNode(ctx, "cache off, memo off", true, -1)
	if err != nil {
		return err
	}
	sample, err := rg.sampler(ctx)
	if err != nil {
		return err
	}
	fixed := sample()
	// With DisableCompression the client sends no Accept-Encoding: plain answers.
	r := &runner{key: rg.key, client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: !gz}}}
	fmt.Println("running scenarios (sequential requests)...")
	report := "/premium/forensic-report/" + rg.agent
	// The very first report on a fresh process: nothing cached, no memo.
	if err := r.scenario("forensic report 100k, first request of a fresh node", "<= 200 ms", bare, 1, 0, get(bare, report)); err != nil {
		return err
	}
	steps := []struct {
		name, target string
		nd           *node
		count, warm  int
		req          func(int) (*http.Request, error)
	}{
		{"bulk verify 1000 random ids, memo off (ingest digests compared, no Ed25519)", "<= 25 ms", bare, n, 3, post(bare, sample)},
		{"bulk verify 1000 random ids per request, memo on", "<= 25 ms", uncached, n, 3, post(uncached, sample)},
		{"bulk verify the same 1000 ids, memo warm", "<= 25 ms", uncached, n, 3, post(uncached, func() []byte { return fixed })},
		{"full history 1000, cache off", "<= 20 ms", uncached, n, 3, get(uncached, "/premium/full-history/"+rg.agent)},
		{"full history 1000, cached", "<= 20 ms", cached, n, 3, get(cached, "/premium/full-history/"+rg.agent)},
		{"forensic report 100k, cache off, memo off (cold)", "<= 200 ms", bare, cold, 1, get(bare, report)},
		{"forensic report 100k, cache off, memo on", "<= 200 ms", uncached, cold, 1, get(uncached, report)},
		{"forensic report 100k, cached", "<= 5 ms", cached, n, 3, get(cached, report)},
	}
	for _, s := range steps {
		if err := r.scenario(s.name, s.target, s.nd, s.count, s.warm, s.req); err != nil {
			return err
		}
	}
	r.report(gz)
	return nil
}

// rig is the bench's seeded stores, its Redis and an API key.
type rig struct {
	st      *store.Store
	rdb     *redis.Client
	prefix  string
	keys    *apikey.Service
	key     string // the API key's secret
	agent   string // the seeded agent's PDA
	quiet   *slog.Logger
	closers []func()
}

func (rg *rig) close() {
	for i := len(rg.closers) - 1; i >= 0; i-- {
		rg.closers[i]()
	}
}

// openRig seeds one agent with atts attestations and makes an API key.
func openRig(ctx context.Context, atts int, quiet *slog.Logger) (_ *rig, err error) {
	rg := &rig{quiet: quiet}
	defer func() {
		if err != nil {
			rg.close()
		}
	}()
	bs, err := benchkit.OpenStores(ctx, "bench_premium", store.Options{MaxConns: 16})
	if err != nil {
		return nil, err
	}
	rg.closers = append(rg.closers, bs.Close)
	rg.st = bs.Store
	fmt.Printf("seeding 1 agent with %d attestations...\n", atts)
	seeded, err := seed.Run(ctx, rg.st, seed.Options{Agents: 1, Attestations: atts, Seed: 1, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if _, err := rg.st.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil { // what autovacuum does after a bulk load
		return nil, err
	}
	rg.agent = seeded.Agents[0].PDA.String()
	fmt.Printf("seeded in %s\n", seeded.Duration.Round(time.Second))
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return nil, err
	}
	rg.rdb = redis.NewClient(ropt)
	rg.closers = append(rg.closers, func() { rg.rdb.Close() })
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	rg.prefix = "bench" + hex.EncodeToString(pfx[:]) + ":"
	if rg.keys, err = apikey.New(ctx, apikey.Deps{Store: rg.st, Redis: rg.rdb, Channel: rg.prefix + apikey.ChannelSuffix, Logger: quiet}); err != nil {
		return nil, err
	}
	rg.closers = append(rg.closers, rg.keys.Close)
	acc, _, err := rg.st.EnsureAccount(ctx, "bench")
	if err != nil {
		return nil, err
	}
	key, err := rg.keys.Create(ctx, acc.ID, "bench")
	if err != nil {
		return nil, err
	}
	rg.key = key.Secret
	return rg, nil
}

// startNode serves the premium routes behind keys in this process, on
// loopback, timing each request in the server (closed with the rig).
func (rg *rig) startNode(ctx context.Context, name string, cacheOff bool, memo int) (*node, error) {
	c, err := cache.New(ctx, rg.rdb, cache.Options{Prefix: rg.prefix, Disabled: cacheOff, Logger: rg.quiet})
	if err != nil {
		return nil, err
	}
	rec := &recorder{}
	timing := func(fc *fiber.Ctx) error {
		t0 := time.Now()
		err := fc.Next()
		rec.add(time.Since(t0))
		return err
	}
	a := app.New(app.Deps{Store: rg.st, Cache: c, Logger: rg.quiet, Middleware: []fiber.Handler{timing}})
	h, err := premium.New(premium.Deps{Store: rg.st, Cache: c, Logger: rg.quiet, Config: premium.Config{MemoEntries: memo},
		Auth: rg.keys.Require(apikey.RequireOptions{})})
	if err != nil {
		c.Close()
		return nil, err
	}
	h.Routes(a)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.Close()
		return nil, err
	}
	go func() { _ = a.Fiber().Listener(ln) }()
	rg.closers = append(rg.closers, func() { _ = a.Fiber().Shutdown(); c.Close() })
	return &node{name: name, url: "http://" + ln.Addr().String() + httpapi.Prefix, rec: rec}, nil
}

// sampler returns a bulk-verify body of 1000 ids drawn (seeded) from
// every attestation.
func (rg *rig) sampler(ctx context.Context) (func() []byte, error) {
	rows, err := rg.st.Pool().Query(ctx, "SELECT pda FROM attestations")
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	return func() []byte {
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = all[rng.IntN(len(all))]
		}
		b, _ := json.Marshal(map[string][]string{"ids": ids})
		return b
	}, nil
}

func get(nd *node, path string) func(int) (*http.Request, error) {
	return func(int) (*http.Request, error) { return http.NewRequest(http.MethodGet, nd.url+path, nil) }
}

func post(nd *node, body func() []byte) func(int) (*http.Request, error) {
	return func(int) (*http.Request, error) {
		r, err := http.NewRequest(http.MethodPost, nd.url+"/premium/bulk-verify", bytes.NewReader(body()))
		if err == nil {
			r.Header.Set("Content-Type", "application/json")
		}
		return r, err
	}
}

// result is one scenario's timings and the size of its answers.
type result struct {
	name, target string
	server       []time.Duration
	client       []time.Duration
	bytes        int
}

// runner runs the scenarios with one API key and keeps their results.
type runner struct {
	key     string
	client  *http.Client
	results []result
}

// scenario sends count requests (after warmup more) made by req to nd,
// one at a time, each expecting 200.
func (r *runner) scenario(name, target string, nd *node, count, warmup int, req func(i int) (*http.Request, error)) error {
	var cl []time.Duration
	size := 0
	for i := -warmup; i < count; i++ {
		hr, err := req(i)
		if err != nil {
			return err
		}
		hr.Header.Set("x-api-key", r.key)
		t0 := time.Now()
		res, err := r.client.Do(hr)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		el := time.Since(t0)
		if res.StatusCode != 200 {
			return fmt.Errorf("%s: status %d: %.200s", name, res.StatusCode, b)
		}
		if i < 0 {
			nd.rec.take() // drop the warm-up
		} else {
			cl = append(cl, el)
		}
		size = len(b)
	}
	r.results = append(r.results, result{name: name, target: target, server: nd.rec.take(), client: cl, bytes: size})
	fmt.Printf("  %-58s done\n", name)
	return nil
}

// report prints the results as the markdown of RESULTS.md.
func (r *runner) report(gz bool) {
	fmt.Printf("\n%s, GOMAXPROCS %d, %s, load average %s, gzip answers %v (body: the JSON size)\n", runtime.Version(), runtime.GOMAXPROCS(0),
		time.Now().UTC().Format(time.RFC3339), benchkit.LoadAvg(), gz)
	fmt.Println()
	fmt.Println("| scenario | n | server p50 | p90 | max | client p50 | body | target |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	for _, res := range r.results {
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s |\n", res.name, len(res.server), ms(benchkit.Percentile(res.server, 50)),
			ms(benchkit.Percentile(res.server, 90)), ms(benchkit.Percentile(res.server, 100)), ms(benchkit.Percentile(res.client, 50)), kb(res.bytes), res.target)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func kb(n int) string { return fmt.Sprintf("%.0f KB", float64(n)/1000) }
