// Command edge-bench measures HTTP caching on loopback with wrk: 304 Not
// Modified answers of a node against the bare Fiber baseline, and a hot
// list through the nginx edge (deploy/nginx.conf) against one node
// without it.
//
//	go run ./bench/edge [-duration 10s] [-rounds 4] [-connections 64] [-threads 2]
//
// The 304 comparison interleaves the baseline and the three 304 scenarios
// in rounds (each run half the duration, each round starting one scenario
// later); a scenario's share of the baseline is the median over the rounds
// of its run against the same round's baseline run. On a shared 2-core
// machine the rate of one handler drifts by 10% from run to run, more than
// the differences measured: interleaving spreads the drift over all of them
// alike, and the median keeps one run that met a passing slowdown from
// deciding the figure.
//
// Run from the repository root after `make build` (it runs bin/attestd and
// bin/baseline, as production would). It uses ATTESTD_TEST_POSTGRES_URL
// and ATTESTD_TEST_REDIS_URL when set (`attestd stores` sets them) and
// otherwise starts its own throwaway servers; nginx comes from devstack,
// installed with apt-get when missing. Every server binds 127.0.0.1 and
// stops when it ends. It prints a Markdown table and the machine's load.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/bench/internal/wrk"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
)

func main() {
	dur := flag.Duration("duration", 10*time.Second, "length of each wrk run (of the 304 comparison's: half)")
	rounds := flag.Int("rounds", 4, "rounds of the 304 comparison (baseline and the three 304s, interleaved)")
	conns := flag.Int("connections", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	atts := flag.Int("attestations", 100_000, "attestations to seed")
	flag.Parse()
	if err := run(context.Background(), *dur, *rounds, *conns, *threads, *atts); err != nil {
		fmt.Fprintln(os.Stderr, "edge-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name, what string
	rps        float64
	p50, p99   string
	non2xx     bool
	rounds     []float64 // the 304 comparison: each round's requests/s (rps is their mean)
}

// params are the run's command line.
type params struct {
	dur                          time.Duration
	rounds, conns, threads, atts int
}

// scenario is one wrk run's target.
type scenario struct {
	name, what, url string
	header          []string
}

// targets are what the scenarios ask: one node's API, the edge's, and the
// validators of the detail and the list (plain and gzip).
type targets struct {
	nodeURL, edgeURL, baseURL       string
	detail, list                    string
	detailTag, listTag, listGzipTag string
}

func run(ctx context.Context, dur time.Duration, rounds, conns, threads, atts int) error {
	p := params{dur: dur, rounds: rounds, conns: conns, threads: threads, atts: atts}
	if err := checkTools(); err != nil {
		return err
	}
	tg, stop, err := startServers(ctx, atts)
	if err != nil {
		return err
	}
	defer stop()
	if err := tg.aim(); err != nil {
		return err
	}
	loadStart := benchkit.LoadAvg()
	results, err := measure(ctx, p, tg)
	if err != nil {
		return err
	}
	report(p, results, loadStart, benchkit.LoadAvg())
	return nil
}

// checkTools makes sure the binaries and wrk are there.
func checkTools() error {
	for _, bin := range []string{"bin/attestd", "bin/baseline"} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s: run make build (and go build -o bin/baseline ./bench/baseline) first", bin)
		}
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found (make bench installs it)")
	}
	return nil
}

// startServers seeds the bench's database and starts one `attestd serve`
// (rate limit off), the bare Fiber baseline and nginx from
// deploy/nginx.conf in front of the node; stop stops them all.
func startServers(ctx context.Context, atts int) (_ *targets, stop func(), err error) {
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
	bs, err := benchkit.OpenStores(ctx, "edge_bench", store.Options{MaxConns: 8})
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, bs.Close)
	fmt.Fprintf(os.Stderr, "seeding 50 agents, %d attestations...\n", atts)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := seed.Run(ctx, bs.Store, seed.Options{Agents: 50, Attestations: atts, Seed: 1, Logger: quiet}); err != nil {
		return nil, nil, err
	}
	if _, err := bs.Store.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, nil, err
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	env := append(os.Environ(), "DATABASE_URL="+bs.DatabaseURL, "REDIS_URL="+bs.RedisURL, "ATTESTD_REDIS_PREFIX=bench"+hex.EncodeToString(pfx[:])+":",
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_METRICS_ADDR=", "ATTESTD_MAX_CONNS_PER_IP=0")
	nodePort, err := devstack.FreePort()
	if err != nil {
		return nil, nil, err
	}
	node := "127.0.0.1:" + strconv.Itoa(nodePort)
	_, stopNode, err := benchkit.Start(ctx, append(env, "ATTESTD_HTTP_ADDR="+node), 10*time.Second, "bin/attestd", "http://"+node+"/api/v1/health", "serve")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopNode)
	basePort, err := devstack.FreePort()
	if err != nil {
		return nil, nil, err
	}
	base := "127.0.0.1:" + strconv.Itoa(basePort)
	_, stopBase, err := benchkit.Start(ctx, env, 10*time.Second, "bin/baseline", "http://"+base+"/json", "-addr", base)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopBase)
	edge, err := devstack.StartNginx(ctx, filepath.Join(bs.Dir, "nginx"), devstack.NginxOptions{
		Config: "deploy/nginx.conf", Upstreams: []string{node}, Workers: runtime.NumCPU()})
	if err != nil {
		return nil, nil, fmt.Errorf("start nginx: %w", err)
	}
	stops = append(stops, edge.Stop)
	return &targets{nodeURL: "http://" + node + "/api/v1", edgeURL: edge.URL + "/api/v1", baseURL: "http://" + base + "/json"}, stop, nil
}

// aim picks an attestation, reads the validators the 304 scenarios send,
// and warms the edge until it answers the list from its cache.
func (tg *targets) aim() error {
	var page struct {
		Data []struct{ PDA string } `json:"data"`
	}
	if _, err := getJSON(tg.nodeURL+"/attestations?limit=1&offset=500", nil, &page); err != nil || len(page.Data) == 0 {
		return fmt.Errorf("no attestation to aim at: %v", err)
	}
	tg.detail, tg.list = "/attestations/"+page.Data[0].PDA, "/attestations?limit=20"
	tag := func(url string, gz bool) (string, error) {
		h := map[string]string{}
		if gz {
			h["Accept-Encoding"] = "gzip"
		}
		res, err := getJSON(url, h, nil)
		if err != nil {
			return "", err
		}
		return res.Header.Get("ETag"), nil
	}
	var err error
	if tg.detailTag, err = tag(tg.nodeURL+tg.detail, false); err != nil {
		return err
	}
	if tg.listTag, err = tag(tg.nodeURL+tg.list, false); err != nil {
		return err
	}
	if tg.listGzipTag, err = tag(tg.nodeURL+tg.list, true); err != nil {
		return err
	}
	for i := 0; ; i++ {
		res, err := getJSON(tg.edgeURL+tg.list, nil, nil)
		if err != nil {
			return err
		}
		if res.Header.Get("X-Cache-Status") == "HIT" {
			return nil
		}
		if i == 200 {
			return fmt.Errorf("the edge never answered the list from its cache")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runWrk runs wrk against s for d.
func runWrk(ctx context.Context, p params, s scenario, d time.Duration) (result, error) {
	args := []string{"-t" + strconv.Itoa(p.threads), "-c" + strconv.Itoa(p.conns), "-d" + d.String(), "--latency"}
	for _, h := range s.header {
		args = append(args, "-H", h)
	}
	args = append(args, s.url)
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk %s: %w\n%s", s.name, err, out)
	}
	r := parseWrk(string(out))
	r.name, r.what = s.name, s.what
	fmt.Fprintf(os.Stderr, "[%s] %.0f req/s p50 %s p99 %s%s\n", s.name, r.rps, r.p50, r.p99, map[bool]string{true: " (non-2xx/3xx answers!)"}[r.non2xx])
	return r, nil
}

// measure runs the 304 comparison (the baseline and the three 304s, in
// interleaved rounds of half-length runs), then each edge scenario once.
func measure(ctx context.Context, p params, tg *targets) ([]result, error) {
	compared := []scenario{
		{"baseline", "bare Fiber JSON handler", tg.baseURL, nil},
		{"304 attestation", "GET /attestations/:id, If-None-Match its ETag (finalized)", tg.nodeURL + tg.detail, []string{"If-None-Match: " + tg.detailTag}},
		{"304 list", "GET /attestations?limit=20, If-None-Match its ETag", tg.nodeURL + tg.list, []string{"If-None-Match: " + tg.listTag}},
		{"304 list gzip", "the same, Accept-Encoding: gzip and the gzip ETag", tg.nodeURL + tg.list, []string{"If-None-Match: " + tg.listGzipTag, "Accept-Encoding: gzip"}},
	}
	results := make([]result, len(compared))
	short := max(p.dur/2, time.Second)
	for round := range p.rounds {
		// Each round starts one scenario later, so that over as many rounds
		// as scenarios each runs once in each position: a machine that
		// slows within a round does not always slow the same one.
		for j := range compared {
			i := (round + j) % len(compared)
			r, err := runWrk(ctx, p, compared[i], short)
			if err != nil {
				return nil, err
			}
			r.rounds = append(results[i].rounds, r.rps)
			r.rps = 0
			for _, v := range r.rounds {
				r.rps += v
			}
			r.rps /= float64(len(r.rounds))
			r.non2xx = r.non2xx || results[i].non2xx
			results[i] = r // latencies: the last run's
		}
	}
	for _, s := range []scenario{
		{"200 list, node", "GET /attestations?limit=20 from one node (hot in its cache)", tg.nodeURL + tg.list, nil},
		{"200 list, edge", "the same through nginx (a HIT)", tg.edgeURL + tg.list, nil},
		{"200 list gzip, node", "GET /attestations?limit=20, Accept-Encoding: gzip, one node", tg.nodeURL + tg.list, []string{"Accept-Encoding: gzip"}},
		{"200 list gzip, edge", "the same through nginx (a HIT)", tg.edgeURL + tg.list, []string{"Accept-Encoding: gzip"}},
		{"304 list, edge", "If-None-Match its ETag through nginx", tg.edgeURL + tg.list, []string{"If-None-Match: " + tg.listTag}},
	} {
		r, err := runWrk(ctx, p, s, p.dur)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// report prints the results as the markdown of RESULTS.md.
func report(p params, results []result, loadStart, loadEnd string) {
	by := map[string]result{}
	for _, r := range results {
		by[r.name] = r
	}
	basel := by["baseline"].rps
	// share is a 304 scenario's rate as a share of the baseline: the median
	// over the rounds of its run against the same round's baseline run (a
	// run that met a passing slowdown weighs no more than any other).
	share := func(name string) float64 {
		r, b := by[name].rounds, by["baseline"].rounds
		if len(r) == 0 || len(r) != len(b) {
			return by[name].rps / basel
		}
		ratios := make([]float64, len(r))
		for i := range r {
			ratios[i] = r[i] / b[i]
		}
		slices.Sort(ratios)
		if n := len(ratios); n%2 == 1 {
			return ratios[n/2]
		}
		return (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
	}
	fmt.Printf("# Edge benchmark: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("Machine: %d cores (shared with other work), GOMAXPROCS %d. Load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadStart, loadEnd)
	fmt.Printf("wrk -t%d -c%d on loopback; one `attestd serve` (rate limit off), nginx from deploy/nginx.conf with %d workers in front of it; 50 agents, %d attestations.\n\n",
		p.threads, p.conns, runtime.NumCPU(), p.atts)
	fmt.Printf("The baseline and the three 304s ran in %d interleaved rounds of %s runs, each round starting one scenario later; their requests/s are the means of their runs (each run's in brackets, in round order), their latencies their last run's, and their share of the baseline the median over the rounds of each run against the same round's baseline run. The edge rows ran once, %s each; their share is of the baseline's mean.\n\n",
		p.rounds, max(p.dur/2, time.Second), p.dur)
	fmt.Println("| scenario | what | requests/s | vs baseline | p50 | p99 |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, r := range results {
		warn := ""
		if r.non2xx {
			warn = " (errors!)"
		}
		each := ""
		if len(r.rounds) > 0 {
			f := make([]string, len(r.rounds))
			for i, v := range r.rounds {
				f[i] = strconv.FormatFloat(v, 'f', 0, 64)
			}
			each = " (" + strings.Join(f, ", ") + ")"
		}
		fmt.Printf("| %s | %s | %.0f%s%s | %.0f%% | %s | %s |\n", r.name, r.what, r.rps, each, warn, 100*share(r.name), r.p50, r.p99)
	}
	fmt.Println()
	fmt.Printf("304 answers/s as a share of the baseline: attestation %.0f%%, list %.0f%%, list gzip %.0f%% (target >= 90%%; the ratios of the means: %.0f%%, %.0f%%, %.0f%%).\n",
		100*share("304 attestation"), 100*share("304 list"), 100*share("304 list gzip"),
		100*by["304 attestation"].rps/basel, 100*by["304 list"].rps/basel, 100*by["304 list gzip"].rps/basel)
	fmt.Printf("Hot list through the edge as a multiple of one node: %.2fx plain, %.2fx gzip.\n",
		by["200 list, edge"].rps/by["200 list, node"].rps, by["200 list gzip, edge"].rps/by["200 list gzip, node"].rps)
}

// parseWrk reads requests/s and the 50th and 99th percentile latencies.
func parseWrk(out string) result {
	f := wrk.Parse(out)
	return result{rps: f.RPS, p50: f.P50, p99: f.P99, non2xx: f.Non2xx}
}

var plain = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}

func getJSON(url string, header map[string]string, out any) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := plain.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d", url, res.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, err
		}
	}
	return res, nil
}
