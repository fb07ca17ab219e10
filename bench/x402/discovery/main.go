// Command x402-discovery-bench measures what paying agents hit before they
// pay, against the bare Fiber baseline (bench/baseline), hot, with wrk on
// loopback: GET /.well-known/x402 (the catalog) and an unpaid premium
// request (the 402 with its bazaar extension in PAYMENT-REQUIRED).
//
//	go build -o bin/baseline ./bench/baseline
//	go run ./bench/x402/discovery [-duration 5s] [-rounds 3] [-c 64] [-t 2]
//
// The baseline and the two scenarios run in interleaved rounds (each round
// starting one scenario later); a scenario's share of the baseline is the
// median over the rounds of its run against the same round's baseline
// run, as bench/edge does. It starts a throwaway Postgres and Redis
// (devstack) unless DATABASE_URL (an admin URL) and REDIS_URL are set, the
// chain simulator, and one in-process API node on 127.0.0.1 with keys,
// premium routes, a self-settling verifier, receipts and discovery.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/devtools/devnet"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/x402"
	"github.com/attestd/attestd/x402/receipt"
	"github.com/attestd/attestd/x402/verifier"
	"github.com/attestd/attestd/x402/x402fiber"
	"github.com/gagliardetto/solana-go"
	"github.com/redis/go-redis/v9"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func main() {
	dur := flag.Duration("duration", 5*time.Second, "length of each wrk run")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	conns := flag.Int("c", 64, "wrk connections")
	threads := flag.Int("t", 2, "wrk threads")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the node (this process) to this file")
	only := flag.String("only", "", "run only the baseline and this scenario (app floor, discovery, 402 bazaar)")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if *dur > time.Minute || *rounds > 10 || *conns > 256 || *threads > 4 {
		fmt.Fprintln(os.Stderr, "x402-discovery-bench: bounded runs only (duration <= 1m, rounds <= 10, c <= 256, t <= 4)")
		os.Exit(2)
	}
	if err := run(context.Background(), *dur, *rounds, *conns, *threads, *only); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "x402-discovery-bench:", err)
		os.Exit(1)
	}
}

type scenario struct {
	name, what, url string
	rps             []float64
	p50, p99        string
	// cpu is the serving process's CPU time per answer (µs), per run;
	// wrkCPU the load generator's (on the same cores).
	cpu, wrkCPU []float64
}

func run(ctx context.Context, dur time.Duration, rounds, conns, threads int, only string) error {
	if _, err := os.Stat("bin/baseline"); err != nil {
		return fmt.Errorf("bin/baseline: go build -o bin/baseline ./bench/baseline first")
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed")
	}
	cache.RouteRedisLogs(quiet)
	node, agent, stop, err := startNode(ctx)
	if err != nil {
		return err
	}
	defer stop()
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	baseAddr := bl.Addr().String()
	bl.Close()
	cmd := exec.Command("bin/baseline", "-addr", baseAddr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := waitUp("http://" + baseAddr + "/json"); err != nil {
		return err
	}
	// Check the scenarios answer what they should before timing them.
	for url, want := range map[string]int{node + "/.well-known/x402": 200, node + "/api/v1/premium/full-history/" + agent: 402} {
		res, err := http.Get(url)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			return fmt.Errorf("%s: %d %s", url, res.StatusCode, b)
		}
		if want == 402 {
			pr, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
			if err != nil || pr.Extensions[x402.ExtensionBazaar] == nil {
				return fmt.Errorf("402 without bazaar: %v", err)
			}
			fmt.Printf("402: PAYMENT-REQUIRED %d bytes (bazaar included), body %d bytes, %d bytes on the wire; ", len(res.Header.Get(x402.HeaderPaymentRequired)), len(b), wireSize(url))
		} else {
			fmt.Printf("/.well-known/x402: %d bytes; ", len(b))
		}
	}
	fmt.Println()
	load1, _ := os.ReadFile("/proc/loadavg")
	sc := []*scenario{
		{name: "baseline", what: "bare Fiber JSON handler (bench/baseline)", url: "http://" + baseAddr + "/json"},
		{name: "app floor", what: "GET /api/v1/nope: an unknown route of the same node, 404 in the envelope (every middleware, no feature)", url: node + "/api/v1/nope"},
		{name: "discovery", what: "GET /.well-known/x402 (the catalog, 3 resources)", url: node + "/.well-known/x402"},
		{name: "402 bazaar", what: "GET /premium/full-history/:agentId unpaid: 402, PAYMENT-REQUIRED with bazaar", url: node + "/api/v1/premium/full-history/" + agent},
	}
	if only != "" {
		sc = slices.DeleteFunc(sc, func(s *scenario) bool { return s.name != "baseline" && s.name != only })
		if len(sc) != 2 {
			return fmt.Errorf("-only %q: no such scenario", only)
		}
	}
	for r := 0; r < rounds; r++ {
		for i := range sc {
			s := sc[(i+r)%len(sc)]
			pid := os.Getpid()
			if s == sc[0] {
				pid = cmd.Process.Pid
			}
			cpu0 := benchkit.ProcessCPU(pid)
			rps, p50, p99, wcpu, err := wrk(s.url, dur, conns, threads)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			s.rps, s.p50, s.p99 = append(s.rps, rps), p50, p99
			if n := rps * dur.Seconds(); n > 0 {
				s.cpu = append(s.cpu, float64((benchkit.ProcessCPU(pid)-cpu0).Microseconds())/n)
				s.wrkCPU = append(s.wrkCPU, float64(wcpu.Microseconds())/n)
			}
		}
	}
	load2, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("## x402 discovery benchmark: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("Machine: %d cores (shared), GOMAXPROCS %d. Load average %s at the start, %s at the end.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), strings.Join(strings.Fields(string(load1))[:3], " "), strings.Join(strings.Fields(string(load2))[:3], " "))
	fmt.Printf("wrk -t%d -c%d on loopback, %d interleaved rounds of %s runs; one in-process API node (rate limit off, receipts on).\n\n", threads, conns, rounds, dur)
	fmt.Println("| scenario | what | requests/s (mean; runs) | vs baseline (median of rounds) | server CPU µs/answer (median) | wrk CPU µs/answer (median) | p50 | p99 |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	base := sc[0]
	for _, s := range sc {
		var shares []float64
		for i := range s.rps {
			shares = append(shares, s.rps[i]/base.rps[i])
		}
		slices.Sort(shares)
		var runs []string
		for _, x := range s.rps {
			runs = append(runs, strconv.FormatFloat(x, 'f', 0, 64))
		}
		slices.Sort(s.cpu)
		slices.Sort(s.wrkCPU)
		fmt.Printf("| %s | %s | %.0f (%s) | %.0f%% | %.1f | %.1f | %s | %s |\n", s.name, s.what, mean(s.rps), strings.Join(runs, ", "),
			100*median(shares), median(s.cpu), median(s.wrkCPU), s.p50, s.p99)
	}
	return nil
}

// median of sorted xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

var (
	rpsRe = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	p50Re = regexp.MustCompile(`\s50%\s+(\S+)`)
	p99Re = regexp.MustCompile(`\s99%\s+(\S+)`)
	errRe = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// wrk runs one bounded wrk and reads requests/s and latencies. Non-2xx
// answers are expected for the 402 scenario and counted as answers.
func wrk(url string, dur time.Duration, conns, threads int) (float64, string, string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), dur+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+dur.String(), "--latency", url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, "", "", 0, fmt.Errorf("wrk: %v: %s", err, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	m := rpsRe.FindSubmatch(out)
	if m == nil {
		return 0, "", "", 0, fmt.Errorf("wrk output: %s", out)
	}
	rps, _ := strconv.ParseFloat(string(m[1]), 64)
	p50, p99 := "", ""
	if m := p50Re.FindSubmatch(out); m != nil {
		p50 = string(m[1])
	}
	if m := p99Re.FindSubmatch(out); m != nil {
		p99 = string(m[1])
	}
	_ = errRe
	return rps, p50, p99, cpu, nil
}

// wireSize is the whole answer to a GET of url (status line, headers,
// body) in bytes, as wrk reads it.
func wireSize(url string) int {
	host := strings.TrimPrefix(url, "http://")
	path := "/"
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host, path = host[:i], host[i:]
	}
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return 0
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host); err != nil {
		return 0
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 1<<20))
	return len(b)
}

func waitUp(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not up in 30 s", url)
}

// startNode starts the stores, the simulator and one API node with pay
// per request, receipts and discovery; it returns the node's root URL and
// an agent.
func startNode(ctx context.Context) (string, string, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) (string, string, func(), error) { stop(); return "", "", nil, err }
	bs, err := benchkit.OpenStores(ctx, "bench_x402_discovery", store.Options{MaxConns: 16})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, bs.Close)
	st := bs.Store
	seeded, err := seed.Run(ctx, st, seed.Options{Agents: 1, Attestations: 200, Seed: 3, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	opt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return fail(err)
	}
	rdb := redis.NewClient(opt)
	stops = append(stops, func() { rdb.Close() })
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	prefix := "x402disc" + hex.EncodeToString(pfx[:]) + ":"
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, c.Close)
	st.SetNotifier(c)
	chain, err := devnet.Start(ctx, devnet.Config{Logger: quiet})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, chain.Close)
	feePayer, payTo := chain.NewKeypair(), chain.NewKeypair().PublicKey()
	chain.Fund(feePayer.PublicKey(), 1000*solana.LAMPORTS_PER_SOL)
	if _, err := chain.MintTo(devnet.DevnetUSDCMint, payTo, 0); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	origin, err := config.ParseOrigin("http://" + ln.Addr().String())
	if err != nil {
		return fail(err)
	}
	cfg := verifier.Config{PayTo: payTo, Network: x402.Devnet, Asset: devnet.DevnetUSDCMint, Decimals: 6,
		Prices:   map[string]uint64{"/premium/full-history/:agentId": 10_000, "/premium/forensic-report/:agentId": 50_000, "/premium/bulk-verify": 20_000},
		FeePayer: feePayer, RPCURL: chain.RPCURL(), SettleTimeout: 10 * time.Second, FacilitatorTimeout: 5 * time.Second}
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := receipt.NewSigner(key, origin)
	if err != nil {
		return fail(err)
	}
	v, err := verifier.New(ctx, verifier.Deps{Config: cfg, Redis: rdb, KeyPrefix: prefix + "x402:", Ledger: st, Logger: quiet, Receipts: signer})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, v.Close)
	keys, err := apikey.New(ctx, apikey.Deps{Store: st, Redis: rdb, Channel: prefix + apikey.ChannelSuffix, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	stops = append(stops, keys.Close)
	api := app.New(app.Deps{Store: st, Cache: c, Logger: quiet, OpenAPIPatch: cfg.PatchOpenAPI})
	keys.Routes(api)
	h, err := premium.New(premium.Deps{Auth: keys.Require(apikey.RequireOptions{OnMissingKey: x402fiber.New(v, origin)}), Store: st, Cache: c, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	h.Routes(api)
	disc, err := x402fiber.NewDiscovery(v, origin)
	if err != nil {
		return fail(err)
	}
	disc.Routes(api)
	go func() { _ = api.Fiber().Listener(ln) }()
	stops = append(stops, func() { _ = api.Fiber().ShutdownWithTimeout(5 * time.Second) })
	return origin.String(), seeded.Agents[0].PDA.String(), stop, nil
}
