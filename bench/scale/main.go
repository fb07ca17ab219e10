// Command scale-bench measures uncached reads at two data sizes, 100,000
// and 10,000,000 attestations by default: the detail of one attestation,
// a filtered list with its total, agent statistics and the forensic
// report of the largest agent, p50 and p99, each size against the smaller.
//
//	go run ./bench/scale [-dir .run/bench-scale] [-sizes 100000,10000000] [-n 400]
//
// The data is kept: a PostgreSQL cluster under -dir holds one database per
// size, seeded once with `attestd seed` (its progress line shows the rate
// and ETA; 10M takes a while) and reused by later runs. Requests go to an
// `attestd serve` process per size with ATTESTD_CACHE=off, one in flight,
// on loopback; the load average is reported with the figures. The sizes'
// requests alternate (one to each size, then the next), so that whatever
// else the machine does while a scenario runs weighs on every size alike.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/jackc/pgx/v5"
)

func main() {
	dir := flag.String("dir", ".run/bench-scale", "where the PostgreSQL cluster with the seeded databases is kept")
	sizes := flag.String("sizes", "100000,10000000", "attestation counts to measure, comma-separated")
	agents := flag.Int("agents", 50, "agents per database")
	n := flag.Int("n", 400, "requests per scenario")
	seedOnly := flag.Bool("seed-only", false, "seed the databases and stop")
	out := flag.String("out", "", "also write the results table to this file")
	admin := flag.String("admin-url", "", "use this PostgreSQL server (a superuser URL) instead of the cluster under -dir")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *dir, *admin, *sizes, *agents, *n, *seedOnly, *out); err != nil {
		fmt.Fprintln(os.Stderr, "scale-bench:", err)
		os.Exit(1)
	}
}

// server is where the databases live.
type server struct {
	admin string // superuser URL of the database "postgres"
}

// db is the URL of another database on the server.
func (s server) db(name string) string {
	u := s.admin
	q := ""
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u, q = u[:i], u[i:]
	}
	return u[:strings.LastIndexByte(u, '/')+1] + name + q
}

func run(ctx context.Context, dir, admin, sizeList string, agents, n int, seedOnly bool, out string) error {
	var sizes []int
	for _, s := range strings.Split(sizeList, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return fmt.Errorf("bad size %q", s)
		}
		sizes = append(sizes, v)
	}
	bin, err := filepath.Abs("bin/attestd")
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("build bin/attestd first (make build): %w", err)
	}
	pg := server{admin: admin}
	if admin == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		_ = os.Chmod(dir, 0o755)
		kept, err := devstack.StartPostgres(ctx, filepath.Join(dir, "pg"))
		if err != nil {
			return fmt.Errorf("start postgres: %w", err)
		}
		defer kept.Stop()
		pg.admin = kept.URL
	}
	for _, size := range sizes {
		if err := ensureSeeded(ctx, pg, bin, size, agents); err != nil {
			return err
		}
	}
	if seedOnly {
		return nil
	}
	return measure(ctx, pg, bin, sizes, n, out)
}

func dbName(size int) string { return "scale_" + strconv.Itoa(size) }

// ensureSeeded makes the database of a size and seeds it with attestd seed
// until it holds size attestations. A run that was interrupted is resumed:
// the same seed makes the same events, and events already stored are
// skipped by the write path.
func ensureSeeded(ctx context.Context, pg server, bin string, size, agents int) error {
	name := dbName(size)
	admin, err := pgx.Connect(ctx, pg.admin)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	var exists bool
	err = admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err == nil && !exists {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	}
	admin.Close(ctx)
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	url := pg.db(name)
	have, err := attestations(ctx, url)
	if err != nil {
		return err
	}
	if have == int64(size) {
		// Data kept from an earlier run: bring its schema up to this
		// binary's migrations (keys, payments, sessions... move on).
		mig := exec.CommandContext(ctx, bin, "migrate")
		mig.Env = append(os.Environ(), "DATABASE_URL="+url, "ATTESTD_LOG_LEVEL=warn")
		t0 := time.Now()
		if out, err := mig.CombinedOutput(); err != nil {
			return fmt.Errorf("migrate kept database %s: %w: %s", name, err, out)
		}
		migrated := time.Since(t0)
		// A migration may rewrite rows (0009 fills a column of the hourly
		// counters): vacuum as autovacuum would soon after, so the
		// visibility map is as production has it.
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			return fmt.Errorf("vacuum %s: %w", name, err)
		}
		fmt.Printf("%s: %d attestations already seeded (schema migrated in %s, then vacuumed)\n", name, size, migrated.Round(time.Second))
		return nil
	}
	fmt.Printf("%s: seeding %d attestations over %d agents (found %d)\n", name, size, agents, have)
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "seed", "--agents", strconv.Itoa(agents), "--attestations", strconv.Itoa(size), "--batch", "5000")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "REDIS_URL=", "ATTESTD_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("seed %s: %w", name, err)
	}
	seeded := time.Since(start)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	t0 := time.Now()
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil { // what autovacuum does after a bulk load
		return fmt.Errorf("vacuum %s: %w", name, err)
	}
	var bytes int64
	_ = conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&bytes)
	fmt.Printf("%s: seeded in %s (%.0f attestations/s), vacuum analyze %s, database %.1f GB\n", name,
		seeded.Round(time.Second), float64(size)/seeded.Seconds(), time.Since(t0).Round(time.Second), float64(bytes)/1e9)
	return nil
}

// attestations is the database's attestation total from the counters (0
// before the first migration).
func attestations(ctx context.Context, url string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("connect %s: %w", url, err)
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, "SELECT COALESCE(sum(n), 0) FROM attestation_counts WHERE agent_pda = ''").Scan(&n)
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "42P01" { // not migrated yet
		return 0, nil
	}
	return n, err
}

// scenario is one kind of request, measured at every size.
type scenario struct {
	name string
	n    int                            // requests (the forensic report is heavy: fewer)
	path func(d *dataset, i int) string // request path under /api/v1
	key  bool                           // needs the API key
}

// dataset is what requests are drawn from at one size.
type dataset struct {
	size    int
	pdas    []string
	agents  []string
	largest string // the agent with the most attestations
	largeN  int64
	first   time.Time
	last    time.Time
	rng     *rand.Rand
	apiKey  string
	baseURL string
}

var types = []string{"Transaction", "Decision", "ModelInvocation", "ToolCall", "ResourceAccess", "PolicyCheck", "Custom"}

func scenarios(n int) []scenario {
	return []scenario{
		{name: "uncached GET /attestations/:id (random)", n: n, path: func(d *dataset, i int) string {
			return "/attestations/" + d.pdas[d.rng.IntN(len(d.pdas))]
		}},
		{name: "filtered list with total (random agent, type, time range to the second)", n: n, path: func(d *dataset, i int) string {
			span := d.last.Sub(d.first)
			from := d.first.Add(time.Duration(d.rng.Int64N(int64(span))))
			to := from.Add(time.Duration(d.rng.Int64N(int64(d.last.Sub(from)) + 1)))
			return fmt.Sprintf("/attestations?limit=20&agentPda=%s&actionType=%s&from=%s&to=%s", d.agents[d.rng.IntN(len(d.agents))],
				types[d.rng.IntN(len(types))], from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
		}},
		{name: "agent stats (random agent)", n: n, path: func(d *dataset, i int) string {
			return "/agents/" + d.agents[d.rng.IntN(len(d.agents))] + "/stats"
		}},
		{name: "forensic report of the largest agent", n: max(n/10, 20), key: true, path: func(d *dataset, i int) string {
			return "/premium/forensic-report/" + d.largest
		}},
	}
}

func measure(ctx context.Context, pg server, bin string, sizes []int, n int, out string) error {
	tmp, err := os.MkdirTemp("", "attestd-scale-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	_ = os.Chmod(tmp, 0o755)
	rds, err := devstack.StartRedis(ctx, filepath.Join(tmp, "redis"), 0)
	if err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	defer rds.Stop()
	scs := scenarios(n)
	type figures struct{ p50, p99 time.Duration }
	results := map[int][]figures{}
	loadBefore := benchkit.LoadAvg()
	var notes []string
	datasets := make([]*dataset, len(sizes))
	for j, size := range sizes {
		d, err := sample(ctx, pg.db(dbName(size)), size)
		if err != nil {
			return err
		}
		warmed, err := prewarm(ctx, pg.db(dbName(size)))
		if err != nil {
			return err
		}
		if d.apiKey, err = createKey(ctx, bin, pg.db(dbName(size))); err != nil {
			return err
		}
		stopNode, url, err := startNode(ctx, bin, pg.db(dbName(size)), rds.URL)
		if err != nil {
			return err
		}
		defer stopNode()
		d.baseURL = url
		datasets[j] = d
		notes = append(notes, fmt.Sprintf("%d attestations: largest agent has %d; %s", size, d.largeN, warmed))
	}
	client := &http.Client{Timeout: 60 * time.Second}
	for _, sc := range scs {
		lat := make([][]time.Duration, len(sizes))
		warm := max(sc.n/20, 3)
		for i := -warm; i < sc.n; i++ {
			for j, d := range datasets {
				el, err := one(ctx, client, d, sc, i)
				if err != nil {
					return fmt.Errorf("%d, %s: %w", sizes[j], sc.name, err)
				}
				if i >= 0 {
					lat[j] = append(lat[j], el)
				}
			}
		}
		for j, size := range sizes {
			results[size] = append(results[size], figures{benchkit.Percentile(lat[j], 50), benchkit.Percentile(lat[j], 99)})
			fmt.Printf("  %-10d %-75s p50 %s  p99 %s\n", size, sc.name, ms(benchkit.Percentile(lat[j], 50)), ms(benchkit.Percentile(lat[j], 99)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s on %d cores; load average before %s, after %s (uptime).\n\n", time.Now().UTC().Format(time.RFC3339),
		runtimeCores(), loadBefore, benchkit.LoadAvg())
	for _, nt := range notes {
		fmt.Fprintf(&b, "- %s\n", nt)
	}
	fmt.Fprintf(&b, "\n| scenario (ATTESTD_CACHE=off, one request in flight) |")
	for _, size := range sizes {
		fmt.Fprintf(&b, " %s p50 | %s p99 |", human(size), human(size))
	}
	if len(sizes) > 1 {
		fmt.Fprintf(&b, " p99 %s / %s |", human(sizes[len(sizes)-1]), human(sizes[0]))
	}
	b.WriteString("\n|---|")
	for range sizes {
		b.WriteString("---:|---:|")
	}
	if len(sizes) > 1 {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for i, sc := range scs {
		fmt.Fprintf(&b, "| %s (n=%d) |", sc.name, sc.n)
		for _, size := range sizes {
			f := results[size][i]
			fmt.Fprintf(&b, " %s | %s |", ms(f.p50), ms(f.p99))
		}
		if len(sizes) > 1 {
			big, small := results[sizes[len(sizes)-1]][i].p99, results[sizes[0]][i].p99
			fmt.Fprintf(&b, " %.2fx |", float64(big)/float64(max(small, 1)))
		}
		b.WriteString("\n")
	}
	fmt.Println()
	fmt.Print(b.String())
	if out != "" {
		return os.WriteFile(out, []byte(b.String()), 0o644)
	}
	return nil
}

// one sends request i of sc to d's node and returns how long the answer
// took (a non-200 is an error).
func one(ctx context.Context, client *http.Client, d *dataset, sc scenario, i int) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.baseURL+sc.path(d, i), nil)
	if err != nil {
		return 0, err
	}
	if sc.key {
		req.Header.Set("x-api-key", d.apiKey)
	}
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	el := time.Since(t0)
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %.300s", req.URL.Path, res.StatusCode, body)
	}
	return el, nil
}

// sample draws request inputs from a database: random attestations (a
// block sample: no sort of the whole table), the agents, the largest.
func sample(ctx context.Context, url string, size int) (*dataset, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	d := &dataset{size: size, rng: rand.New(rand.NewPCG(uint64(size), 1))}
	pct := math.Min(100, math.Max(0.01, 4000.0/float64(size)*100))
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT pda FROM attestations TABLESAMPLE SYSTEM (%f) LIMIT 4000", pct))
	if err != nil {
		return nil, err
	}
	if d.pdas, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(d.pdas) == 0 {
		return nil, fmt.Errorf("sample attestations: %v (%d)", err, len(d.pdas))
	}
	rows, err = conn.Query(ctx, "SELECT pda FROM agents ORDER BY pda")
	if err != nil {
		return nil, err
	}
	if d.agents, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	err = conn.QueryRow(ctx, `SELECT agent_pda, sum(n)::bigint FROM attestation_counts WHERE agent_pda <> ''
		GROUP BY 1 ORDER BY 2 DESC LIMIT 1`).Scan(&d.largest, &d.largeN)
	if err != nil {
		return nil, fmt.Errorf("largest agent: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT (SELECT ts FROM attestations ORDER BY ts LIMIT 1), (SELECT ts FROM attestations ORDER BY ts DESC LIMIT 1)`).Scan(&d.first, &d.last)
	return d, err
}

// prewarm reads the attestations table, its indexes and the counters into
// the OS page cache, as on a database server with memory for its working
// set (the outbox, written once and read by the webhook relay, is left
// out). Both sizes get the same.
func prewarm(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err != nil {
		return "", fmt.Errorf("pg_prewarm: %w", err)
	}
	t0 := time.Now()
	var blocks int64
	err = conn.QueryRow(ctx, `SELECT COALESCE(sum(pg_prewarm(c.oid::regclass, 'read')), 0)::bigint FROM pg_class c
		WHERE c.relname IN ('attestations', 'attestation_hours', 'attestation_counts', 'agents', 'agent_events')
		OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('attestations'::regclass, 'attestation_hours'::regclass))`).Scan(&blocks)
	if err != nil {
		return "", fmt.Errorf("prewarm: %w", err)
	}
	return fmt.Sprintf("prewarmed %.1f GB in %s", float64(blocks)*8192/1e9, time.Since(t0).Round(time.Second)), nil
}

func createKey(ctx context.Context, bin, url string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "keys", "create", "--account", "scale-bench", "--label", "scale bench")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "ATTESTD_LOG_LEVEL=warn")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("create api key: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// startNode runs attestd serve on the database with both cache layers off.
func startNode(ctx context.Context, bin, dbURL, redisURL string) (func(), string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "REDIS_URL="+redisURL, "ATTESTD_HTTP_ADDR="+addr,
		"ATTESTD_CACHE=off", "ATTESTD_RATE_LIMIT=0", "ATTESTD_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=warn",
		"ATTESTD_REDIS_PREFIX=scale"+strconv.Itoa(os.Getpid())+":", "ATTESTD_SOLANA_RPC_URL=http://127.0.0.1:1")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	stop := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
	url := "http://" + addr + "/api/v1"
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url + "/stats")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return stop, url, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, "", fmt.Errorf("attestd serve on %s did not answer: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func human(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

func runtimeCores() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}
