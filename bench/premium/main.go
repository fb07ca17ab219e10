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
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/apikey"
	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/benchkit"
	"github.com/attestd/attestd/internal/seed"
	"github.com/attestd/attestd/premium"
	"github.com/attestd/attestd/store"
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
	bs, err := benchkit.OpenStores(ctx, "bench_premium", store.Options{MaxConns: 16})
	if err != nil {
		return err
	}
	defer bs.Close()
	st := bs.Store
	fmt.Printf("seeding 1 agent with %d attestations...\n", atts)
	seeded, err := seed.Run(ctx, st, seed.Options{Agents: 1, Attestations: atts, Seed: 1, Logger: quiet})
	if err != nil {
		return err
	}
	if _, err := st.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil { // what autovacuum does after a bulk load
		return err
	}
	agent := seeded.Agents[0].PDA.String()
	fmt.Printf("seeded in %s\n", seeded.Duration.Round(time.Second))

	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	prefix := "bench" + hex.EncodeToString(pfx[:]) + ":"

	keys, err := apikey.New(ctx, apikey.Config{Store: st, Redis: rdb, Channel: prefix + apikey.ChannelSuffix, Logger: quiet})
	if err != nil {
		return err
	}
	defer keys.Close()
	acc, _, err := st.EnsureAccount(ctx, "bench")
	if err != nil {
		return err
	}
	key, err := keys.Create(ctx, acc.ID, "bench")
	if err != nil {
		return err
	}

	start := func(name string, cacheOff bool, memo int) (*node, func(), error) {
		c, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, Disabled: cacheOff, Logger: quiet})
		if err != nil {
			return nil, nil, err
		}
		rec := &recorder{}
		timing := func(fc *fiber.Ctx) error {
			t0 := time.Now()
			err := fc.Next()
			rec.add(time.Since(t0))
			return err
		}
		a := app.New(app.Deps{Store: st, Cache: c, Logger: quiet, Middleware: []fiber.Handler{timing}})
		h, err := premium.New(premium.Config{Store: st, Cache: c, Logger: quiet, MemoEntries: memo})
		if err != nil {
			return nil, nil, err
		}
		h.Routes(a, keys.Require(apikey.RequireOptions{}))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = a.Fiber().Listener(ln) }()
		return &node{name: name, url: "http://" + ln.Addr().String() + app.Prefix, rec: rec},
			func() { _ = a.Fiber().Shutdown(); c.Close() }, nil
	}
	cached, stop1, err := start("cache on", false, 0)
	if err != nil {
		return err
	}
	defer stop1()
	uncached, stop2, err := start("cache off", true, 0)
	if err != nil {
		return err
	}
	defer stop2()
	bare, stop3, err := start("cache off, memo off", true, -1)
	if err != nil {
		return err
	}
	defer stop3()

	var all []string
	rows, err := st.Pool().Query(ctx, "SELECT pda FROM attestations")
	if err != nil {
		return err
	}
	if all, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	sample := func() []byte {
		ids := make([]string, 1000)
		for i := range ids {
			ids[i] = all[rng.IntN(len(all))]
		}
		b, _ := json.Marshal(map[string][]string{"ids": ids})
		return b
	}
	fixed := sample()

	// With DisableCompression the client sends no Accept-Encoding: plain answers.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: !gz}}
	type result struct {
		name, target string
		server       []time.Duration
		client       []time.Duration
		bytes        int
	}
	var results []result
	scenario := func(name, target string, nd *node, count, warmup int, req func(i int) (*http.Request, error)) error {
		var cl []time.Duration
		size := 0
		for i := -warmup; i < count; i++ {
			r, err := req(i)
			if err != nil {
				return err
			}
			r.Header.Set("x-api-key", key.Secret)
			t0 := time.Now()
			res, err := client.Do(r)
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
		results = append(results, result{name: name, target: target, server: nd.rec.take(), client: cl, bytes: size})
		fmt.Printf("  %-58s done\n", name)
		return nil
	}
	get := func(nd *node, path string) func(int) (*http.Request, error) {
		return func(int) (*http.Request, error) { return http.NewRequest(http.MethodGet, nd.url+path, nil) }
	}
	post := func(nd *node, body func() []byte) func(int) (*http.Request, error) {
		return func(int) (*http.Request, error) {
			r, err := http.NewRequest(http.MethodPost, nd.url+"/premium/bulk-verify", bytes.NewReader(body()))
			if err == nil {
				r.Header.Set("Content-Type", "application/json")
			}
			return r, err
		}
	}
	fmt.Println("running scenarios (sequential requests)...")
	report := "/premium/forensic-report/" + agent
	// The very first report on a fresh process: nothing cached, no memo.
	if err := scenario("forensic report 100k, first request of a fresh node", "<= 200 ms", bare, 1, 0, get(bare, report)); err != nil {
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
		{"full history 1000, cache off", "<= 20 ms", uncached, n, 3, get(uncached, "/premium/full-history/"+agent)},
		{"full history 1000, cached", "<= 20 ms", cached, n, 3, get(cached, "/premium/full-history/"+agent)},
		{"forensic report 100k, cache off, memo off (cold)", "<= 200 ms", bare, cold, 1, get(bare, report)},
		{"forensic report 100k, cache off, memo on", "<= 200 ms", uncached, cold, 1, get(uncached, report)},
		{"forensic report 100k, cached", "<= 5 ms", cached, n, 3, get(cached, report)},
	}
	for _, s := range steps {
		if err := scenario(s.name, s.target, s.nd, s.count, s.warm, s.req); err != nil {
			return err
		}
	}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\n%s, GOMAXPROCS %d, %s, load average %s, gzip answers %v (body: the JSON size)\n", runtime.Version(), runtime.GOMAXPROCS(0),
		time.Now().UTC().Format(time.RFC3339), strings.Join(strings.Fields(string(load))[:3], " "), gz)
	fmt.Println()
	fmt.Println("| scenario | n | server p50 | p90 | max | client p50 | body | target |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range results {
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %s | %s |\n", r.name, len(r.server), ms(benchkit.Percentile(r.server, 50)),
			ms(benchkit.Percentile(r.server, 90)), ms(benchkit.Percentile(r.server, 100)), ms(benchkit.Percentile(r.client, 50)), kb(r.bytes), r.target)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

func kb(n int) string { return fmt.Sprintf("%.0f KB", float64(n)/1000) }
