// Command fleet-bench measures the fleet on loopback with wrk: nginx
// (deploy/nginx.conf) in front of three `attestd serve` nodes against one
// node without nginx, on the same reads, with the edge's cache out of the
// way (the nodes say s-maxage=0, so every request reaches a node), and
// says which processes used the CPU: on a 2-core machine the machine is
// the ceiling, and the split shows what saturates.
//
//	go run ./bench/fleet [-duration 5s] [-connections 64] [-threads 2]
//
// Run from the repository root after `make build`. It starts its own
// fleet (internal/devtools/fleet: Postgres with a replica, Redis, the chain
// simulator, two indexers, workers, three nodes, nginx) and one more node
// on the same stores; every server binds 127.0.0.1 and stops when it ends.
// It prints a Markdown section.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/bench/internal/wrk"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/fleet"
	"github.com/jackc/pgx/v5"
)

func main() {
	dur := flag.Duration("duration", 5*time.Second, "length of each wrk run")
	conns := flag.Int("connections", 64, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	atts := flag.Int("attestations", 20_000, "attestations the chain simulator records at start (indexed before the runs)")
	flag.Parse()
	if err := run(context.Background(), *dur, *conns, *threads, *atts); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-bench:", err)
		os.Exit(1)
	}
}

type result struct {
	name, what string
	rps        float64
	p50, p99   string
	errors     bool
	cpu        map[string]float64 // CPU seconds by process name during the run
}

func run(ctx context.Context, dur time.Duration, conns, threads, atts int) error {
	bin, err := filepath.Abs("bin/attestd")
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("bin/attestd: run make build first")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found (make bench installs it)")
	}
	tmp, err := os.MkdirTemp("", "attestd-fleet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// Every node the same: no limiter, no connection cap, and answers the
	// edge may not keep, so nginx forwards every request.
	env := []string{"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_MAX_CONNS_PER_IP=0",
		"ATTESTD_HTTP_S_MAXAGE=0s", "ATTESTD_HTTP_STALE_WHILE_REVALIDATE=0s"}
	fmt.Fprintf(os.Stderr, "starting the fleet (%d attestations on the chain, indexed and finalized before the runs)...\n", atts)
	f, err := fleet.Start(ctx, fleet.Options{Bin: bin, Dir: tmp, NginxConf: "deploy/nginx.conf", Agents: 50, Attestations: atts,
		NginxWorkers: runtime.NumCPU(), Env: env, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer f.Close()
	if err := waitIndexed(ctx, f, atts); err != nil {
		return err
	}
	// One more node on the same stores, without nginx.
	port, err := devstack.FreePort()
	if err != nil {
		return err
	}
	single := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(append([]string{}, f.Env...), env...), "ATTESTD_HTTP_ADDR="+single, "ATTESTD_METRICS_ADDR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	if err := waitOK(ctx, "http://"+single+"/api/v1/health"); err != nil {
		return err
	}

	lists := func(name string, maxOffset int) (string, error) {
		path := filepath.Join(tmp, name+".lua")
		return path, os.WriteFile(path, []byte(fmt.Sprintf(`local types = {"Transaction","Decision","ModelInvocation","ToolCall","ResourceAccess","PolicyCheck","Custom"}
request = function()
  return wrk.format("GET", "/api/v1/attestations?limit=20&actionType=" .. types[math.random(#types)] .. "&offset=" .. math.random(0, %d))
end
`, maxOffset)), 0o644)
	}
	hot, err := lists("hot", 200)
	if err != nil {
		return err
	}
	deep, err := lists("deep", 2000)
	if err != nil {
		return err
	}
	loadStart := benchkit.LoadAvg()
	scenarios := []struct {
		name, what, base, script string
	}{
		{"hot lists, 1 node", "random actionType, offset 0..200 (1,407 pages, hot in the node caches), one node, no nginx", "http://" + single, hot},
		{"hot lists, nginx + 3", "the same through nginx over 3 nodes", f.Nginx.URL, hot},
		{"deep lists, 1 node", "random actionType, offset 0..2000 (14,007 pages, mostly cache misses: Postgres), one node", "http://" + single, deep},
		{"deep lists, nginx + 3", "the same through nginx over 3 nodes", f.Nginx.URL, deep},
	}
	var results []result
	for _, s := range scenarios {
		args := []string{"-t" + strconv.Itoa(threads), "-c" + strconv.Itoa(conns), "-d" + dur.String(), "--latency"}
		args = append(args, "-s", s.script)
		url := s.base
		// Warm the caches on the path measured (not counted).
		warm := append([]string{"-t1", "-c8", "-d2s", "-s", s.script}, url)
		if out, err := exec.CommandContext(ctx, "wrk", warm...).CombinedOutput(); err != nil {
			return fmt.Errorf("wrk warm-up %s: %w\n%s", s.name, err, out)
		}
		before := cpuByName()
		w := exec.CommandContext(ctx, "wrk", append(args, url)...)
		out, err := w.CombinedOutput()
		if err != nil {
			return fmt.Errorf("wrk %s: %w\n%s", s.name, err, out)
		}
		r := parseWrk(string(out))
		r.name, r.what, r.cpu = s.name, s.what, diff(cpuByName(), before)
		r.cpu["wrk"] = (w.ProcessState.UserTime() + w.ProcessState.SystemTime()).Seconds() // gone from /proc by now
		if r.errors {
			fmt.Fprintf(os.Stderr, "%s\n", out)
			if m := regexp.MustCompile(`Socket errors: .*|Non-2xx or 3xx responses: \d+`).FindAllString(string(out), -1); m != nil {
				r.what += " (wrk: " + strings.Join(m, "; ") + ")"
			}
		}
		fmt.Fprintf(os.Stderr, "[%s] %.0f req/s p50 %s p99 %s cpu %s\n", r.name, r.rps, r.p50, r.p99, cpuLine(r.cpu, dur))
		results = append(results, r)
	}
	loadEnd := benchkit.LoadAvg()

	fmt.Printf("## fleet: nginx over three nodes against one node (%s)\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("wrk -t%d -c%d -d%s on loopback, on the machine it measures. Every node: rate limit off, `s-maxage=0` (nginx forwards every request; its cache is measured by the edge part). nginx from deploy/nginx.conf with %d workers; the fleet's other processes (2 indexers, 2 workers, Postgres and its replica, Redis, the chain simulator with no traffic, every attestation finalized) idle; a 2 s warm-up precedes each run. Load average %s at the start, %s at the end.\n\n",
		threads, conns, dur, runtime.NumCPU(), loadStart, loadEnd)
	fmt.Println("| scenario | what | requests/s | vs 1 node | p50 | p99 | CPU cores used, by process |")
	fmt.Println("|---|---|---:|---:|---:|---:|---|")
	var one float64
	for i, r := range results {
		if i%2 == 0 {
			one = r.rps
		}
		warn := ""
		if r.errors {
			warn = " (errors!)"
		}
		fmt.Printf("| %s | %s | %.0f%s | %.2fx | %s | %s | %s |\n", r.name, r.what, r.rps, warn, r.rps/one, r.p50, r.p99, cpuLine(r.cpu, dur))
	}
	fmt.Println()
	return nil
}

// waitIndexed waits until every attestation is stored and finalized: the
// indexer's promotions move the cache epoch, which would turn the runs'
// hot reads into misses.
func waitIndexed(ctx context.Context, f *fleet.Fleet, want int) error {
	conn, err := pgx.Connect(ctx, f.Primary.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var n, open int
		if err := conn.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE NOT finalized) FROM attestations").Scan(&n, &open); err != nil {
			return err
		}
		if n >= want && open == 0 {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("the fleet did not index and finalize %d attestations within 5 minutes", want)
}

func waitOK(ctx context.Context, url string) error {
	for range 600 {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s never answered 200", url)
}

// cpuTimes is user+system CPU seconds of every process, by pid, with
// its name.
type cpuTimes map[int]struct {
	name string
	secs float64
}

func cpuByName() cpuTimes {
	out := cpuTimes{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
		f := strings.Fields(s[shut+1:])
		if err != nil || len(f) < 13 {
			continue
		}
		name := s[open+1 : shut]
		if strings.HasPrefix(name, "kworker") { // its name changes with the work it does
			name = "kworker"
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		out[pid] = struct {
			name string
			secs float64
		}{name, (ut + st) / 100} // USER_HZ
	}
	return out
}

// diff is the CPU seconds each process name used between two samples
// (processes that ended in between are not counted).
func diff(after, before cpuTimes) map[string]float64 {
	out := map[string]float64{}
	for pid, a := range after {
		if d := a.secs - before[pid].secs; d > 0 {
			out[a.name] += d
		}
	}
	return out
}

// cpuLine names the processes that used the most CPU, in cores.
func cpuLine(cpu map[string]float64, dur time.Duration) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	total := 0.0
	for k, v := range cpu {
		all = append(all, kv{k, v})
		total += v
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	var parts []string
	for i, e := range all {
		if i == 5 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, e.v/dur.Seconds()))
	}
	return fmt.Sprintf("%.2f of %d: %s", total/dur.Seconds(), runtime.NumCPU(), strings.Join(parts, ", "))
}

func parseWrk(out string) result {
	f := wrk.Parse(out)
	return result{rps: f.RPS, p50: f.P50, p99: f.P99, errors: f.Non2xx || f.SocketErrors}
}
