// Command ratelimit measures what the rate limiter costs an HTTP node: a
// Fiber app with a trivial JSON handler on 127.0.0.1, with the limiter off,
// on (batched, the default) and on with one Redis round trip per request,
// against a throwaway Redis, driven by wrk with many distinct client IPs
// in X-Forwarded-For through a trusted proxy (127.0.0.1). The limit is
// high enough that nothing is refused: this measures cost, not refusals.
//
// Bounded: every wrk run lasts -duration (and is killed after twice
// that), everything binds loopback, and the Redis and the app stop at the
// end.
//
//	go run ./bench/ratelimit -duration 8s -rounds 2
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// wrkScript sends each request from another client address (65,536 of them).
const wrkScript = `
local n = 0
request = function()
  n = n + 1
  local i = n % 65536
  return wrk.format("GET", "/api/v1/stats", {["X-Forwarded-For"] = "100.64." .. math.floor(i / 256) .. "." .. (i % 256)})
end
`

var (
	cpuProfile, profileMode string
	maxOthers               float64
)

type mode struct {
	name string
	cfg  ratelimit.Config // Limit 0: limiter off
}

type result struct {
	mode, load string
	conns      int
	rps        float64
	p50, p99   time.Duration
	errors     string
	// CPU per request, µs: this process (Fiber + limiter), Redis, wrk.
	cpuApp, cpuRedis, cpuWrk float64
	batch                    float64 // mean decisions per round trip
	idle, others             float64 // share of all CPUs idle / used by other processes
}

func main() {
	duration := flag.Duration("duration", 8*time.Second, "length of each wrk run")
	rounds := flag.Int("rounds", 2, "times each mode is measured (interleaved)")
	conns := flag.Int("conns", 64, "wrk connections for the saturation runs")
	light := flag.Int("light", 4, "wrk connections for the light-load latency runs (0 skips them)")
	pipelines := flag.Int("pipelines", 0, "Config.Pipelines of the batched limiter (0: the default)")
	naive := flag.Bool("naive", true, "also measure one round trip per request")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the last measured run of -profile-mode to this file")
	flag.Float64Var(&maxOthers, "max-others", 0.10, "repeat a run (twice at most) when other processes used more than this share of the CPUs")
	flag.StringVar(&profileMode, "profile-mode", "on (batched)", "mode to profile with -cpuprofile")
	flag.Parse()
	if err := run(*duration, *rounds, *conns, *light, *pipelines, *naive); err != nil {
		fmt.Fprintln(os.Stderr, "bench/ratelimit:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, rounds, conns, light, pipelines int, withNaive bool) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk not found (apt-get install wrk)")
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "attestd-bench-ratelimit-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("chmod temp dir: %w", err)
	}
	script := filepath.Join(dir, "xff.lua")
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return fmt.Errorf("write wrk script: %w", err)
	}
	srv, err := devstack.StartRedis(ctx, filepath.Join(dir, "redis"), 0)
	if err != nil {
		return fmt.Errorf("start redis: %w", err)
	}
	defer srv.Stop()

	trusted, _ := ratelimit.ParsePrefixes("127.0.0.1")
	on := ratelimit.Config{Limit: 1 << 30, Window: time.Minute, TrustedProxies: trusted, KeyPrefix: "bench:", Pipelines: pipelines}
	naive := on
	naive.MaxBatch, naive.Pipelines = 1, 128
	modes := []mode{
		{"off", ratelimit.Config{Limit: 0, TrustedProxies: trusted}},
		{"on (batched)", on},
	}
	if withNaive {
		modes = append(modes, mode{"on (1 round trip/request)", naive})
	}
	fmt.Printf("go %s, GOMAXPROCS %d, %d CPUs, wrk -t1, %s per run, %d rounds\n",
		runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU(), duration, rounds)
	var results []result
	for r := 0; r < rounds; r++ {
		for _, m := range modes {
			loads := []int{conns}
			if light > 0 {
				loads = append(loads, light)
			}
			for _, c := range loads {
				var res result
				for try := 0; ; try++ {
					var err error
					if res, err = measure(ctx, srv.URL, m, c, duration, script); err != nil {
						return fmt.Errorf("%s, %d connections: %w", m.name, c, err)
					}
					if res.others <= maxOthers || try == 2 {
						break
					}
					fmt.Printf("  (other processes took %.0f%% of the CPUs: measuring again in 10 s)\n", 100*res.others)
					time.Sleep(10 * time.Second)
				}
				res.load = "saturated"
				if c == light && c != conns {
					res.load = "light"
				}
				fmt.Printf("round %d  %-26s c=%-3d %9.0f req/s  p50 %-9s p99 %-9s cpu/req µs app %.1f redis %.1f wrk %.1f  batch %.1f  idle %.0f%% others %.0f%% %s\n",
					r+1, m.name, c, res.rps, res.p50, res.p99, res.cpuApp, res.cpuRedis, res.cpuWrk, res.batch, 100*res.idle, 100*res.others, res.errors)
				results = append(results, res)
			}
		}
	}
	summarize(results)
	return nil
}

// measure serves the app with the mode's limiter and drives it with wrk.
func measure(ctx context.Context, redisURL string, m mode, conns int, duration time.Duration, script string) (result, error) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return result{}, fmt.Errorf("parse redis url: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, time.Second, time.Second
	opt.PoolSize, opt.MinIdleConns, opt.MaxRetries = 128, 8, 1
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = rdb.FlushAll(fctx).Err()
	cancel()
	if err != nil {
		return result{}, fmt.Errorf("flush redis: %w", err)
	}
	reg := prometheus.NewRegistry()
	lim, err := ratelimit.New(rdb, m.cfg, reg, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return result{}, err
	}
	defer lim.Close()

	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadBufferSize: 16 << 10,
		ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second, IdleTimeout: 90 * time.Second})
	app.Use(lim.Middleware())
	app.Get("/api/v1/stats", func(c *fiber.Ctx) error {
		return c.JSON(fiber.Map{"agents": 50, "attestations": 100000})
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return result{}, fmt.Errorf("listen: %w", err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.ShutdownWithTimeout(5 * time.Second) }()
	url := "http://" + ln.Addr().String()

	// Warm up (connections, script cache), then measure.
	if _, _, err := wrkCPU(ctx, url, script, conns, time.Second); err != nil {
		return result{}, err
	}
	if cpuProfile != "" && m.name == profileMode {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return result{}, fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return result{}, fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	busy0, idle0 := systemCPU()
	app0, redis0 := processCPU(), benchkit.RedisCPU(ctx, rdb)
	trips0, decisions0 := batchStats(reg)
	out, wrkCPU, err := wrkCPU(ctx, url, script, conns, duration)
	if err != nil {
		return result{}, err
	}
	app1, redis1 := processCPU(), benchkit.RedisCPU(ctx, rdb)
	busy1, idle1 := systemCPU()
	trips1, decisions1 := batchStats(reg)
	res, err := parseWrk(out)
	if err != nil {
		return result{}, fmt.Errorf("%w\n%s", err, out)
	}
	res.mode, res.conns = m.name, conns
	reqs := res.rps * duration.Seconds()
	res.cpuApp = (app1 - app0).Seconds() * 1e6 / reqs
	res.cpuRedis = (redis1 - redis0).Seconds() * 1e6 / reqs
	res.cpuWrk = wrkCPU.Seconds() * 1e6 / reqs
	if total := (busy1 - busy0) + (idle1 - idle0); total > 0 {
		res.idle = float64(idle1-idle0) / float64(total)
		mine := (app1 - app0) + (redis1 - redis0) + wrkCPU
		res.others = max(0, float64(busy1-busy0-mine)/float64(total))
	}
	if trips1 > trips0 {
		res.batch = (decisions1 - decisions0) / (trips1 - trips0)
	}
	if lim.Degraded() {
		return result{}, errors.New("limiter degraded during the run: numbers are not the Redis path")
	}
	return res, nil
}

func wrkCPU(ctx context.Context, url, script string, conns int, d time.Duration) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*d+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+d.String(),
		"--timeout", "5s", "--latency", "-s", script, url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("wrk: %w\n%s", err, out.String())
	}
	return out.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// systemCPU returns the busy and idle time of all CPUs so far (/proc/stat).
func systemCPU() (busy, idle time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	const tick = 10 * time.Millisecond // USER_HZ = 100
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i == 3 || i == 4 { // idle, iowait
			idle += time.Duration(n) * tick
		} else if i < 8 { // user nice system (idle iowait) irq softirq steal
			busy += time.Duration(n) * tick
		}
	}
	return busy, idle
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// batchStats reads the limiter's batch-size histogram: round trips and
// decisions so far.
func batchStats(reg *prometheus.Registry) (trips, decisions float64) {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "attestd_ratelimit_batch_size" {
			h := mf.GetMetric()[0].GetHistogram()
			return float64(h.GetSampleCount()), h.GetSampleSum()
		}
	}
	return 0, 0
}

var (
	reRPS     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	reLatency = regexp.MustCompile(`^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	reErrors  = regexp.MustCompile(`(Non-2xx or 3xx responses: \d+|Socket errors: .*)`)
)

func parseWrk(out string) (result, error) {
	var r result
	m := reRPS.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("no Requests/sec in wrk output")
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		lm := reLatency.FindStringSubmatch(sc.Text())
		if lm == nil {
			continue
		}
		v, _ := strconv.ParseFloat(lm[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[lm[3]]
		d := time.Duration(v * float64(unit))
		if lm[1] == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if r.p99 == 0 {
		return r, errors.New("no latency distribution in wrk output")
	}
	r.errors = strings.Join(reErrors.FindAllString(out, -1), "; ")
	return r, nil
}

// summarize prints the medians per mode and load as a Markdown table.
func summarize(results []result) {
	type k struct{ mode, load string }
	groups := map[k][]result{}
	var order []k
	for _, r := range results {
		key := k{r.mode, r.load}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], r)
	}
	median := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	type base struct{ rps, p99, cpu float64 }
	off := map[string]base{}
	fmt.Println("\nMedians of the rounds. CPU µs per request: this process (Fiber + limiter) + Redis + wrk.")
	fmt.Println("\n| mode | load | conns | req/s | vs off | p50 | p99 | p99 added | CPU µs/req app+redis+wrk | CPU vs off | batch | others |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, key := range order {
		rs := groups[key]
		rps := median(rs, func(r result) float64 { return r.rps })
		p50 := time.Duration(median(rs, func(r result) float64 { return float64(r.p50) }))
		p99 := median(rs, func(r result) float64 { return float64(r.p99) })
		app := median(rs, func(r result) float64 { return r.cpuApp })
		rds := median(rs, func(r result) float64 { return r.cpuRedis })
		wrk := median(rs, func(r result) float64 { return r.cpuWrk })
		cpu := app + rds + wrk
		if key.mode == "off" {
			off[key.load] = base{rps, p99, cpu}
		}
		ratio, added, cpuRatio := "", "", ""
		if b, ok := off[key.load]; ok {
			ratio = fmt.Sprintf("%.0f%%", 100*rps/b.rps)
			added = time.Duration(p99 - b.p99).Round(10 * time.Microsecond).String()
			cpuRatio = fmt.Sprintf("%.0f%%", 100*b.cpu/cpu)
		}
		batch := ""
		if b := median(rs, func(r result) float64 { return r.batch }); b > 0 {
			batch = fmt.Sprintf("%.1f", b)
		}
		fmt.Printf("| %s | %s | %d | %.0f | %s | %s | %s | %s | %.1f+%.1f+%.1f = %.1f | %s | %s | %.0f%% |\n",
			key.mode, key.load, rs[0].conns, rps, ratio,
			p50.Round(time.Microsecond), time.Duration(p99).Round(10*time.Microsecond), added,
			app, rds, wrk, cpu, cpuRatio, batch, 100*median(rs, func(r result) float64 { return r.others }))
	}
	fmt.Println("\n\"CPU vs off\" is the throughput ratio the CPU cost alone predicts when all")
	fmt.Println("three processes share the same saturated CPUs (off CPU per request / on CPU per request).")
}
