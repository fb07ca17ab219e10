// Command indexer-bench measures the indexer end to end, simulator to
// Postgres: backfill throughput (attestations/s) with batches of 100 and of
// 1, and live ingest-to-visible latency (from sendTransaction returning to
// the rows being visible in Postgres, and in GET /attestations on another
// API node), p50/p99.
//
//	go run ./bench/indexer [-backfill 50000] [-single 10000] [-live 300]
//
// It starts a throwaway Postgres (devstack) unless DATABASE_URL is set.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/indexer"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func main() {
	backfill := flag.Int("backfill", 50_000, "attestations for the batch-100 backfill")
	single := flag.Int("single", 10_000, "attestations for the batch-1 backfill")
	live := flag.Int("live", 300, "live transactions (10 attestations each) for the latency run")
	liveRate := flag.Float64("live-rate", 20, "live transactions per second")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the backfills here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	if err := run(ctx, *backfill, *single, *live, *liveRate); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(ctx context.Context, backfill, single, live int, liveRate float64) error {
	adminURL := os.Getenv("DATABASE_URL")
	if adminURL == "" {
		dir, err := os.MkdirTemp("", "attestd-bench-pg-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		pg, err := devstack.StartPostgres(ctx, dir+"/data")
		if err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
		defer pg.Remove()
		adminURL = pg.URL
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fmt.Printf("GOMAXPROCS-visible cores: shared 2-core machine; times include the simulator in the same process\n\n")
	if backfill > 0 {
		if err := backfillRun(ctx, adminURL, quiet, "batch 100", backfill, 100); err != nil {
			return err
		}
	}
	if single > 0 {
		if err := backfillRun(ctx, adminURL, quiet, "batch 1", single, 1); err != nil {
			return err
		}
	}
	if live > 0 {
		if err := liveRun(ctx, adminURL, quiet, live, liveRate); err != nil {
			return err
		}
	}
	return nil
}

// freshStore creates a new database and migrates it.
func freshStore(ctx context.Context, adminURL string) (*store.Store, string, func(), error) {
	name := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, "", nil, err
	}
	u := adminURL
	if i := lastSlash(u); i > len("postgres://") {
		q := ""
		if j := indexByte(u, '?'); j > i {
			q = u[j:]
		}
		u = u[:i+1] + name + q
	}
	st, err := store.Open(ctx, u, store.Options{})
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		return nil, "", nil, err
	}
	drop := func() {
		st.Close()
		c, err := pgx.Connect(context.Background(), adminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	return st, u, drop, nil
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

func count(ctx context.Context, st *store.Store) (int, error) {
	var n int
	err := st.Pool().QueryRow(ctx, "SELECT count(*) FROM attestations").Scan(&n)
	return n, err
}

func backfillRun(ctx context.Context, adminURL string, log *slog.Logger, label string, n, batch int) error {
	chain, err := devnet.Start(ctx, devnet.Config{SlotInterval: 400 * time.Millisecond, Logger: log})
	if err != nil {
		return err
	}
	defer chain.Close()
	t0 := time.Now()
	if _, err := chain.Generate(ctx, 20, n, batch); err != nil {
		return err
	}
	genTime := time.Since(t0)
	st, _, drop, err := freshStore(ctx, adminURL)
	if err != nil {
		return err
	}
	defer drop()
	ix, err := indexer.New(indexer.Config{RPCURL: chain.RPCURL(), WSURL: chain.WSURL(), ProgramID: chain.ProgramID(), Logger: log}, st)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	go func() { _ = ix.Run(ictx) }()
	for {
		got, err := count(ctx, st)
		if err != nil {
			return err
		}
		if got >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	el := time.Since(start)
	txs := len(chain.Transactions())
	fmt.Printf("backfill %-9s %6d attestations in %5d transactions: %6.2fs  -> %7.0f attestations/s (%5.0f tx/s)  [chain generation took %.1fs, not counted]\n",
		label, n, txs, el.Seconds(), float64(n)/el.Seconds(), float64(txs)/el.Seconds(), genTime.Seconds())
	cancel()
	time.Sleep(200 * time.Millisecond)
	return nil
}

func liveRun(ctx context.Context, adminURL string, log *slog.Logger, txs int, rate float64) error {
	chain, err := devnet.Start(ctx, devnet.Config{SlotInterval: 400 * time.Millisecond, Agents: 10, Logger: log})
	if err != nil {
		return err
	}
	defer chain.Close()
	st, dbURL, drop, err := freshStore(ctx, adminURL)
	if err != nil {
		return err
	}
	defer drop()
	listURL, stopAPI, err := apiNode(ctx, st, dbURL, log)
	if err != nil {
		return err
	}
	defer stopAPI()
	ix, err := indexer.New(indexer.Config{RPCURL: chain.RPCURL(), WSURL: chain.WSURL(), ProgramID: chain.ProgramID(), Logger: log}, st)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = ix.Run(ictx) }()
	time.Sleep(2 * time.Second) // elected, subscribed, caught up

	type pending struct {
		sig  string
		sent time.Time
	}
	sent := make(chan pending, txs)
	go func() {
		defer close(sent)
		interval := time.Duration(float64(time.Second) / rate)
		for i := 0; i < txs; i++ {
			g, err := chain.Generate(ctx, 10, 10, 10)
			if err != nil {
				fmt.Fprintln(os.Stderr, "generate:", err)
				return
			}
			sent <- pending{g.Records[0].String(), time.Now()}
			time.Sleep(interval)
		}
	}()
	waiting := map[string]time.Time{}    // not yet in Postgres
	waitingAPI := map[string]time.Time{} // not yet in GET /attestations on the API node
	var lat, latAPI []time.Duration
	open := true
	for open || len(waiting) > 0 || len(waitingAPI) > 0 {
		drain := true
		for drain {
			select {
			case p, ok := <-sent:
				if !ok {
					open, drain = false, false
					break
				}
				waiting[p.sig] = p.sent
				waitingAPI[p.sig] = p.sent
			default:
				drain = false
			}
		}
		if len(waiting) > 0 {
			sigs := make([]string, 0, len(waiting))
			for s := range waiting {
				sigs = append(sigs, s)
			}
			rows, err := st.Pool().Query(ctx, "SELECT DISTINCT tx_signature FROM attestations WHERE tx_signature = ANY($1)", sigs)
			if err != nil {
				return err
			}
			now := time.Now()
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					return err
				}
				lat = append(lat, now.Sub(waiting[s]))
				delete(waiting, s)
			}
			rows.Close()
		}
		if len(waitingAPI) > 0 {
			seen, err := listed(ctx, listURL)
			if err != nil {
				return err
			}
			now := time.Now()
			for s, t := range waitingAPI {
				if seen[s] {
					latAPI = append(latAPI, now.Sub(t))
					delete(waitingAPI, s)
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	report := func(what string, lat []time.Duration) {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
		fmt.Printf("live: %d transactions (10 attestations each) at %.0f tx/s, ingest-to-visible %s: p50 %s, p90 %s, p99 %s, max %s\n",
			len(lat), rate, what, pct(0.50).Round(time.Millisecond), pct(0.90).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	}
	report("in Postgres", lat)
	report("in GET /attestations on another API node", latAPI)
	return nil
}

// apiNode starts an API node of its own (own pool, own cache subscribed to
// the index epoch) over the indexer's database and a throwaway Redis, and
// wires the indexer's store to bump the epoch, as in production. It
// returns the URL of the newest-first list.
func apiNode(ctx context.Context, indexerStore *store.Store, dbURL string, log *slog.Logger) (string, func(), error) {
	dir, err := os.MkdirTemp("", "attestd-bench-redis-")
	if err != nil {
		return "", nil, err
	}
	rs, err := devstack.StartRedis(ctx, dir, 0)
	if err != nil {
		return "", nil, err
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		rs.Stop()
		os.RemoveAll(dir)
	}
	newRedis := func() *redis.Client {
		opt, _ := redis.ParseURL(rs.URL)
		c := redis.NewClient(opt)
		stops = append(stops, func() { c.Close() })
		return c
	}
	writer, err := cache.New(ctx, newRedis(), cache.Options{Prefix: "bench:", SkipSubscriber: true, Logger: log})
	if err != nil {
		stop()
		return "", nil, err
	}
	stops = append(stops, writer.Close)
	indexerStore.SetNotifier(writer)
	st, err := store.Open(ctx, dbURL, store.Options{})
	if err != nil {
		stop()
		return "", nil, err
	}
	stops = append(stops, st.Close)
	c, err := cache.New(ctx, newRedis(), cache.Options{Prefix: "bench:", Logger: log})
	if err != nil {
		stop()
		return "", nil, err
	}
	stops = append(stops, c.Close)
	api := app.New(app.Deps{Store: st, Cache: c, Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return "", nil, err
	}
	go func() { _ = api.Fiber().Listener(ln) }()
	stops = append(stops, func() { _ = api.Fiber().ShutdownWithTimeout(2 * time.Second) })
	return "http://" + ln.Addr().String() + httpapi.Prefix + "/attestations?limit=100", stop, nil
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// listed returns the transaction signatures on the newest page.
func listed(ctx context.Context, url string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("poll api: %w", err)
	}
	defer res.Body.Close()
	var page struct {
		Data []struct {
			TxSignature string `json:"txSignature"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		return nil, fmt.Errorf("poll api: %w", err)
	}
	seen := make(map[string]bool, len(page.Data))
	for _, a := range page.Data {
		seen[a.TxSignature] = true
	}
	return seen, nil
}
