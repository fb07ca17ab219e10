// Command stream-bench measures the live stream on one node: N
// concurrent stream clients (default 5,000) receive each new attestation
// (ingest-to-client latency: from just before the writer's commit to the
// client reading its data line), the node's resident memory with them
// open, and a hot list's requests/s with them open as a share of without.
//
//	go run ./bench/stream [-clients 5000] [-rounds 20] [-duration 5s] [-bin bin/attestd]
//
// Run from the repository root after `make build` (it runs bin/attestd
// serve, as production would; -bin runs another build). It uses ATTESTD_TEST_POSTGRES_URL and
// ATTESTD_TEST_REDIS_URL when set (`attestd stores` sets them) and
// otherwise starts its own throwaway servers. The clients are raw TCP
// connections in this process (one goroutine each), so on a small machine
// they compete with the node for the CPU: the latency includes waking
// 5,000 readers. It raises its open-file limit to the hard limit. Every
// server binds 127.0.0.1 and stops when it ends. It prints Markdown.
package main

import (
	"bufio"
	"context"
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
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/bench/internal/wrk"
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/redis/go-redis/v9"
)

func main() {
	clients := flag.Int("clients", 5000, "concurrent stream clients")
	rounds := flag.Int("rounds", 20, "attestations written, one at a time, each awaited by every client")
	dur := flag.Duration("duration", 5*time.Second, "length of each wrk run of the hot list")
	bin := flag.String("bin", "bin/attestd", "the attestd binary measured")
	flag.Parse()
	if err := run(context.Background(), *clients, *rounds, *dur, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "stream-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, clients, rounds int, dur time.Duration, bin string) error {
	if err := preflight(clients, bin); err != nil {
		return err
	}
	n, err := startNode(ctx, clients, bin)
	if err != nil {
		return err
	}
	defer n.close()
	list := n.base + "/attestations?limit=20"
	if res, err := http.Get(list); err != nil {
		return err
	} else {
		res.Body.Close()
	}
	m := measures{loadStart: benchkit.LoadAvg(), rssIdle: n.rss("VmRSS")}
	wrkRun := func(name string) (wrk.Figures, error) {
		out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c64", "-d"+dur.String(), "--latency", list).CombinedOutput()
		if err != nil {
			return wrk.Figures{}, fmt.Errorf("wrk %s: %w\n%s", name, err, out)
		}
		f := wrk.Parse(string(out))
		fmt.Fprintf(os.Stderr, "[%s] %.0f req/s p50 %s p99 %s\n", name, f.RPS, f.P50, f.P99)
		return f, nil
	}
	if m.before, err = wrkRun("list, no streams"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "opening %d streams...\n", clients)
	sc, err := openStreams(n.addr, clients)
	if err != nil {
		return err
	}
	m.rssOpen = n.rss("VmRSS")
	fmt.Fprintf(os.Stderr, "%d streams open in %s; node RSS %d MiB\n", clients, sc.opened.Round(time.Millisecond), m.rssOpen>>20)
	if m.with, err = wrkRun("list, streams open"); err != nil {
		sc.close()
		return err
	}
	if err := n.latencyRounds(ctx, sc, rounds); err != nil {
		sc.close()
		return err
	}
	m.rssAfter, m.rssPeak = n.rss("VmRSS"), n.rss("VmHWM")
	m.with2, err = wrkRun("list, streams open (again)")
	sc.close()
	if err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // the node sees the streams close
	if m.after, err = wrkRun("list, streams closed"); err != nil {
		return err
	}
	m.loadEnd = benchkit.LoadAvg()
	report(clients, rounds, dur, sc, m)
	return nil
}

// preflight raises the open-file limit (the node inherits it) and checks
// it, the binary and wrk.
func preflight(clients int, bin string) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if need := uint64(2*clients + 512); lim.Cur < need {
		return fmt.Errorf("open-file limit %d, need %d (raise ulimit -n)", lim.Cur, need)
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s: run make build first", bin)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found (make bench installs it)")
	}
	return nil
}

// node is the measured `attestd serve` over the seeded stores, with a
// writer that announces its commits as the indexer does.
type node struct {
	st         *store.Store
	seeded     seed.Result
	addr, base string
	cmd        *exec.Cmd
	closers    []func()
}

func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

func (n *node) rss(field string) int64 { return rss(n.cmd.Process.Pid, field) }

// startNode seeds 20 agents and 20,000 attestations and starts the node
// (rate limit off, room for clients streams from one address).
func startNode(ctx context.Context, clients int, bin string) (_ *node, err error) {
	n := &node{}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	bs, err := benchkit.OpenStores(ctx, "stream_bench", store.Options{MaxConns: 4})
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, bs.Close)
	n.st = bs.Store
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if n.seeded, err = seed.Run(ctx, n.st, seed.Options{Agents: 20, Attestations: 20_000, Seed: 1, Logger: quiet}); err != nil {
		return nil, err
	}
	if _, err := n.st.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, err
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	prefix := "bench" + hex.EncodeToString(pfx[:]) + ":"
	// The writer announces its commits as the indexer does (its cache
	// bumps the epoch).
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(ropt)
	n.closers = append(n.closers, func() { rdb.Close() })
	wc, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, SkipSubscriber: true, Logger: quiet})
	if err != nil {
		return nil, err
	}
	n.closers = append(n.closers, wc.Close)
	n.st.SetNotifier(wc)
	port, err := devstack.FreePort()
	if err != nil {
		return nil, err
	}
	n.addr = "127.0.0.1:" + strconv.Itoa(port)
	env := append(os.Environ(), "DATABASE_URL="+bs.DatabaseURL, "REDIS_URL="+bs.RedisURL, "ATTESTD_REDIS_PREFIX="+prefix,
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_METRICS_ADDR=", "ATTESTD_MAX_CONNS_PER_IP=0",
		"ATTESTD_STREAM_MAX_PER_IP="+strconv.Itoa(clients+10), "ATTESTD_HTTP_ADDR="+n.addr)
	cmd, stop, err := benchkit.Start(ctx, env, 15*time.Second, bin, "http://"+n.addr+"/api/v1/health", "serve")
	if err != nil {
		return nil, err
	}
	n.cmd, n.base = cmd, "http://"+n.addr+"/api/v1"
	n.closers = append(n.closers, stop)
	return n, nil
}

// streams are the stream clients (raw TCP, in this process): each notes
// the latency of every attestation it reads that the bench wrote.
type streams struct {
	sent    sync.Map // pda -> time written
	lat     [][]time.Duration
	got     atomic.Int64
	conns   []net.Conn
	readers sync.WaitGroup
	opened  time.Duration // to open them all
}

// openStreams opens clients streams at addr and returns once each read
// its retry advice.
func openStreams(addr string, clients int) (*streams, error) {
	sc := &streams{lat: make([][]time.Duration, clients)}
	var ready sync.WaitGroup
	start := time.Now()
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			sc.close()
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
		sc.conns = append(sc.conns, c)
		if _, err := io.WriteString(c, "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			sc.close()
			return nil, err
		}
		ready.Add(1)
		sc.readers.Add(1)
		go sc.read(i, c, ready.Done)
	}
	ready.Wait()
	sc.opened = time.Since(start)
	return sc, nil
}

// read reads stream i until its connection closes, calling ready once
// the retry advice came (or the stream ended before it).
func (sc *streams) read(i int, c net.Conn, ready func()) {
	defer sc.readers.Done()
	br := bufio.NewReaderSize(c, 2048)
	once := false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if !once {
				ready()
			}
			return
		}
		now := time.Now()
		if !once && strings.HasPrefix(string(line), "retry:") {
			once = true
			ready()
			continue
		}
		if s := string(line); strings.HasPrefix(s, "data: {\"pda\":\"") {
			pda, _, _ := strings.Cut(s[len("data: {\"pda\":\""):], "\"")
			if t, ok := sc.sent.Load(pda); ok {
				sc.lat[i] = append(sc.lat[i], now.Sub(t.(time.Time)))
				sc.got.Add(1)
			}
		}
	}
}

// close closes every stream and waits for its reader.
func (sc *streams) close() {
	for _, c := range sc.conns {
		c.Close()
	}
	sc.conns = nil
	sc.readers.Wait()
}

// latencyRounds writes rounds new attestations, one at a time, each
// awaited (30 s at most) by every stream client.
func (n *node) latencyRounds(ctx context.Context, sc *streams, rounds int) error {
	agents := n.seeded.Agents[:1]
	slot := uint64(1 << 40)
	clients := len(sc.lat)
	for r := range rounds {
		recs := seed.NewAttestations(agents, 1, time.Now(), slot, uint64(r+1))
		recs[0].Commitment = attestation.Confirmed
		slot = recs[0].Slot
		sc.sent.Store(recs[0].PDA, time.Now())
		if _, err := n.st.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
			return err
		}
		want := int64((r + 1) * clients)
		deadline := time.Now().Add(30 * time.Second)
		for sc.got.Load() < want && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if sc.got.Load() < want {
			return fmt.Errorf("round %d: %d of %d deliveries within 30 s", r, sc.got.Load(), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// measures are the run's figures besides the latencies.
type measures struct {
	loadStart, loadEnd                  string
	rssIdle, rssOpen, rssAfter, rssPeak int64
	before, with, with2, after          wrk.Figures
}

// report prints the results as the markdown of RESULTS.md.
func report(clients, rounds int, dur time.Duration, sc *streams, m measures) {
	var all []time.Duration
	for _, l := range sc.lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*p))] }
	without, withMean := (m.before.RPS+m.after.RPS)/2, (m.with.RPS+m.with2.RPS)/2
	fmt.Printf("# Stream benchmark: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("Machine: %d cores shared with other work, GOMAXPROCS %d. Load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), m.loadStart, m.loadEnd)
	fmt.Printf("One `attestd serve` (rate limit off) over 20 agents and 20,000 attestations; %d stream clients (raw TCP, in the benchmark's process) from 127.0.0.1; %d attestations written one at a time with store.Apply (as the indexer writes them), each awaited by every client; wrk -t2 -c64 %s on the hot list `GET /attestations?limit=20`, run in the order: no streams, streams open, the latency rounds, streams open again, streams closed.\n\n",
		clients, rounds, dur)
	fmt.Println("| measure | value | target |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| deliveries (clients x attestations) | %d | %d |\n", len(all), clients*rounds)
	fmt.Printf("| ingest-to-client p50 | %s | |\n", pct(0.50).Round(time.Millisecond))
	fmt.Printf("| ingest-to-client p99 | %s | <= 250 ms |\n", pct(0.99).Round(time.Millisecond))
	fmt.Printf("| ingest-to-client max | %s | |\n", all[len(all)-1].Round(time.Millisecond))
	fmt.Printf("| time to open %d streams | %s | |\n", clients, sc.opened.Round(time.Millisecond))
	fmt.Printf("| node RSS before the streams | %d MiB | |\n", m.rssIdle>>20)
	fmt.Printf("| node RSS with %d streams open | %d MiB | <= 300 MB |\n", clients, m.rssOpen>>20)
	fmt.Printf("| node RSS after the %d rounds | %d MiB (peak %d MiB) | <= 300 MB |\n", rounds, m.rssAfter>>20, m.rssPeak>>20)
	fmt.Printf("| hot list, no streams (before, after) | %.0f, %.0f req/s (p99 %s, %s) | |\n", m.before.RPS, m.after.RPS, m.before.P99, m.after.P99)
	fmt.Printf("| hot list, %d streams open (before, after the rounds) | %.0f, %.0f req/s (p99 %s, %s) | |\n", clients, m.with.RPS, m.with2.RPS, m.with.P99, m.with2.P99)
	fmt.Printf("| hot list with streams / without (means of two runs each) | %.0f%% | >= 90%% |\n", 100*withMean/without)
	if m.before.Non2xx || m.with.Non2xx || m.with2.Non2xx || m.after.Non2xx {
		fmt.Println("\n**wrk saw answers other than 2xx/3xx.**")
	}
}

// rss reads a /proc/pid/status field in bytes.
func rss(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
