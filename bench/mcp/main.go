// Command mcp-bench measures the remote MCP endpoint of an API node (POST
// /mcp, the tools answered in process from the node's own API) against the
// REST route that gives the same answer on the same node, and the old path
// beside it: `attestd mcp --http`, a process of its own that calls the
// node's REST API over HTTP with the Go client.
//
//	go run ./bench/mcp [-duration 5s] [-connections 32] [-out bench/mcp/RESULTS.md]
//
// It starts a throwaway PostgreSQL and Redis (benchkit.OpenStores; the
// servers `attestd stores` exports when set), seeds 50 agents, and starts
// one `attestd serve` (rate limit off, no per-address connection cap) and
// one `attestd mcp --http` against it, both on 127.0.0.1. For each tool
// (get_agent, get_agent_stats, list_attestations: tools whose REST
// equivalent is one request) it runs wrk on loopback, in one run: the REST
// GET (the baseline), tools/call over /mcp at protocol 2025-11-25 and at
// 2026-07-28, and tools/call over `attestd mcp --http` (2025-11-25). The
// tools/call requests are the official Go SDK client's own (captured from
// it: its body, its headers, the per-request _meta of 2026-07-28). Every
// answer is warm before it is measured (hot: in the node's cache).
//
// Besides requests/s and latencies it reports the CPU each request cost
// the node, the old path's process and Redis (from /proc and INFO cpu)
// and wrk. With -cpuprofile DIR the node serves its profiler on its
// internal listener and every run's CPU profile of the node is written to
// DIR (the figures of such a run carry the profiler's cost).
//
// Run from the repository root after `make build` (it runs bin/attestd, as
// production would). Bounded: each wrk run lasts -duration after a
// -warmup run, and every process stops when it ends.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/redis/go-redis/v9"
)

// params are the run's command line.
type params struct {
	dur, warmup            time.Duration
	conns, threads, atts   int
	attestd, out, profiles string
	verbose                bool
}

func main() {
	var p params
	flag.DurationVar(&p.dur, "duration", 5*time.Second, "length of each measured wrk run")
	flag.DurationVar(&p.warmup, "warmup", time.Second, "length of the wrk run before each measured one")
	flag.IntVar(&p.conns, "connections", 32, "wrk connections")
	flag.IntVar(&p.threads, "threads", 1, "wrk threads")
	flag.IntVar(&p.atts, "attestations", 20_000, "attestations to seed (over 50 agents)")
	flag.StringVar(&p.attestd, "attestd", "bin/attestd", "the attestd binary (make build)")
	flag.StringVar(&p.out, "out", "bench/mcp/RESULTS.md", "write the report here too (\"\": stdout only)")
	flag.StringVar(&p.profiles, "cpuprofile", "", "write a CPU profile of the node during each run to this directory")
	flag.BoolVar(&p.verbose, "v", false, "print the tools/call requests captured from the SDK client")
	flag.Parse()
	if err := run(context.Background(), p); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-bench:", err)
		os.Exit(1)
	}
}

// rig is what the runs measure: the node, the old path's process, Redis.
type rig struct {
	nodeURL, oldURL, metricsURL string
	nodePID, oldPID             int
	rdb                         *redis.Client
	agent                       string
}

func run(ctx context.Context, p params) error {
	if _, err := os.Stat(p.attestd); err != nil {
		return fmt.Errorf("%s: run make build first (or pass -attestd)", p.attestd)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found (apt-get install wrk; make bench installs it)")
	}
	if p.profiles != "" {
		if err := os.MkdirAll(p.profiles, 0o755); err != nil {
			return err
		}
	}
	rg, stop, err := start(ctx, p)
	if err != nil {
		return err
	}
	defer stop()
	loadStart := benchkit.LoadAvg()
	results, err := measure(ctx, p, rg)
	if err != nil {
		return err
	}
	return report(p, results, loadStart, benchkit.LoadAvg())
}

// start seeds the stores and starts the node and `attestd mcp --http`.
func start(ctx context.Context, p params) (_ *rig, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cache.RouteRedisLogs(quiet)
	bs, err := benchkit.OpenStores(ctx, "mcp_bench", store.Options{MaxConns: 8})
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, bs.Close)
	fmt.Fprintf(os.Stderr, "seeding 50 agents, %d attestations...\n", p.atts)
	seeded, err := seed.Run(ctx, bs.Store, seed.Options{Agents: 50, Attestations: p.atts, Seed: 1, Logger: quiet})
	if err != nil {
		return nil, nil, err
	}
	if _, err := bs.Store.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, nil, err
	}
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	rg := &rig{rdb: redis.NewClient(ropt), agent: seeded.Agents[0].PDA.String()}
	stops = append(stops, func() { rg.rdb.Close() })
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	env := append(os.Environ(), "DATABASE_URL="+bs.DatabaseURL, "REDIS_URL="+bs.RedisURL,
		"ATTESTD_REDIS_PREFIX=bench"+hex.EncodeToString(pfx[:])+":", "ATTESTD_LOG_LEVEL=warn",
		"ATTESTD_RATE_LIMIT=0", "ATTESTD_MAX_CONNS_PER_IP=0", "ATTESTD_METRICS_ADDR=", "ATTESTD_PUBLIC_URL=")
	node, err := freeAddr()
	if err != nil {
		return nil, nil, err
	}
	nodeEnv := append(env, "ATTESTD_HTTP_ADDR="+node)
	if p.profiles != "" {
		metrics, err := freeAddr()
		if err != nil {
			return nil, nil, err
		}
		nodeEnv = append(nodeEnv, "ATTESTD_METRICS_ADDR="+metrics, "ATTESTD_PPROF=on")
		rg.metricsURL = "http://" + metrics
	}
	cmd, stopNode, err := benchkit.Start(ctx, nodeEnv, 10*time.Second, p.attestd, "http://"+node+"/api/v1/health", "serve")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopNode)
	rg.nodeURL, rg.nodePID = "http://"+node, cmd.Process.Pid
	old, err := freeAddr()
	if err != nil {
		return nil, nil, err
	}
	cmd, stopOld, err := startOld(ctx, append(env, "ATTESTD_API_URL="+rg.nodeURL), p.attestd, old)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopOld)
	rg.oldURL, rg.oldPID = "http://"+old+"/mcp", cmd.Process.Pid
	return rg, stop, nil
}

func freeAddr() (string, error) {
	port, err := devstack.FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// report prints the Markdown of RESULTS.md and writes it to p.out.
func report(p params, results []result, loadStart, loadEnd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Remote MCP benchmark: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	commit, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
	fmt.Fprintf(&b, "Written by `go run ./bench/mcp` (`BENCH=mcp make bench`) at commit %s. Machine: %s. Load average (1, 5, 15 min) %s at the start, %s at the end.\n\n",
		cmp.Or(strings.TrimSpace(string(commit)), "unknown"), machine(), loadStart, loadEnd)
	fmt.Fprintf(&b, "One `attestd serve` (rate limit off) over 50 agents and %d attestations, and one `attestd mcp --http` calling it; "+
		"wrk -t%d -c%d on loopback, %s per run after a %s warm-up run, every answer hot (in the node's cache) before it is measured. "+
		"Each tool's rows ran one after the other, REST first. The tools/call requests are the official Go SDK client's (v1.8.0), "+
		"captured from it: at 2026-07-28 with its per-request `_meta` (protocol version, client info and capabilities) and its "+
		"Mcp-Method and Mcp-Name headers.\n\n", p.atts, p.threads, p.conns, p.dur, p.warmup)
	fmt.Fprintf(&b, "\"cost vs REST\" is the REST row's requests/s over the row's (1.00x: as cheap as REST); \"CPU vs REST\" the same with "+
		"the server side's CPU per request (node, plus the old path's process, plus Redis; wrk excluded). The goal: a tool call over "+
		"/mcp costs at most 2x the REST request when hot.\n\n")
	b.WriteString("| tool | path | requests/s | cost vs REST | p50 | p99 | CPU µs/req node+old+redis (+wrk) | CPU vs REST | answer bytes |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	rest := map[string]result{}
	for _, r := range results {
		if r.path == pathREST {
			rest[r.tool] = r
		}
		base := rest[r.tool]
		warn := ""
		if r.non2xx || r.sockErrs {
			warn = " (errors!)"
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f%s | %.2fx | %s | %s | %.1f+%.1f+%.1f = %.1f (+%.1f) | %.2fx | %d |\n",
			r.tool, r.path, r.rps, warn, base.rps/r.rps, r.p50, r.p99, r.cpuNode, r.cpuOld, r.cpuRedis, r.server(), r.cpuWrk,
			r.server()/base.server(), r.bytes)
	}
	b.WriteString("\n")
	summary(&b, results, rest)
	fmt.Print(b.String())
	if p.out != "" {
		if err := os.WriteFile(p.out, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p.out, err)
		}
		fmt.Fprintln(os.Stderr, "wrote", p.out)
	}
	return nil
}

// summary says, per tool, what each path cost against REST and whether
// /mcp met the goal.
func summary(b *strings.Builder, results []result, rest map[string]result) {
	var tools []string
	by := map[string][]result{}
	for _, r := range results {
		if r.path == pathREST {
			tools = append(tools, r.tool)
			continue
		}
		by[r.tool] = append(by[r.tool], r)
	}
	for _, t := range tools {
		base, verdict := rest[t], "met"
		var parts []string
		for _, r := range by[t] {
			cost, cpu := base.rps/r.rps, r.server()/base.server()
			parts = append(parts, fmt.Sprintf("%s %.1fx (CPU %.1fx)", r.path, cost, cpu))
			if r.path != pathOld && (cost > 2 || cpu > 2) {
				verdict = "not met"
			}
		}
		fmt.Fprintf(b, "- %s against REST: %s. Goal (/mcp <= 2x when hot): %s.\n", t, strings.Join(parts, ", "), verdict)
	}
}

// machine describes the machine in one line.
func machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	gv, _ := exec.Command("go", "env", "GOVERSION").Output()
	return fmt.Sprintf("%d cores (%s), %s", runtime.NumCPU(), model, strings.TrimSpace(string(gv)))
}
