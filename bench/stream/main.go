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
	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/benchkit"
	"github.com/attestd/attestd/internal/devstack"
	"github.com/attestd/attestd/internal/seed"
	"github.com/attestd/attestd/internal/wrk"
	"github.com/attestd/attestd/store"
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
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) // the node inherits it
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
	bs, err := benchkit.OpenStores(ctx, "stream_bench", store.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer bs.Close()
	st := bs.Store
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	seeded, err := seed.Run(ctx, st, seed.Options{Agents: 20, Attestations: 20_000, Seed: 1, Logger: quiet})
	if err != nil {
		return err
	}
	if _, err := st.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return err
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	prefix := "bench" + hex.EncodeToString(pfx[:]) + ":"
	// The writer announces its commits as the indexer does (its cache
	// bumps the epoch).
	ropt, err := redis.ParseURL(bs.RedisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	wc, err := cache.New(ctx, rdb, cache.Options{Prefix: prefix, SkipSubscriber: true, Logger: quiet})
	if err != nil {
		return err
	}
	defer wc.Close()
	st.SetNotifier(wc)

	port, err := devstack.FreePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := append(os.Environ(), "DATABASE_URL="+bs.DatabaseURL, "REDIS_URL="+bs.RedisURL, "ATTESTD_REDIS_PREFIX="+prefix,
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_METRICS_ADDR=", "ATTESTD_MAX_CONNS_PER_IP=0",
		"ATTESTD_STREAM_MAX_PER_IP="+strconv.Itoa(clients+10), "ATTESTD_HTTP_ADDR="+addr)
	node, stop, err := benchkit.Start(ctx, env, 15*time.Second, bin, "http://"+addr+"/api/v1/health", "serve")
	if err != nil {
		return err
	}
	defer stop()
	base := "http://" + addr + "/api/v1"
	list := base + "/attestations?limit=20"
	if res, err := http.Get(list); err != nil {
		return err
	} else {
		res.Body.Close()
	}
	loadStart := benchkit.LoadAvg()
	rssIdle := rss(node.Process.Pid, "VmRSS")

	wrkRun := func(name string) (wrk.Figures, error) {
		out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c64", "-d"+dur.String(), "--latency", list).CombinedOutput()
		if err != nil {
			return wrk.Figures{}, fmt.Errorf("wrk %s: %w\n%s", name, err, out)
		}
		f := wrk.Parse(string(out))
		fmt.Fprintf(os.Stderr, "[%s] %.0f req/s p50 %s p99 %s\n", name, f.RPS, f.P50, f.P99)
		return f, nil
	}
	before, err := wrkRun("list, no streams")
	if err != nil {
		return err
	}

	// Open the streams.
	fmt.Fprintf(os.Stderr, "opening %d streams...\n", clients)
	var sent sync.Map // pda -> time written
	lat := make([][]time.Duration, clients)
	var got atomic.Int64
	conns := make([]net.Conn, clients)
	var ready sync.WaitGroup
	var readers sync.WaitGroup
	openStart := time.Now()
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
		conns[i] = c
		if _, err := io.WriteString(c, "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
			return err
		}
		ready.Add(1)
		readers.Add(1)
		go func() {
			defer readers.Done()
			br := bufio.NewReaderSize(c, 2048)
			once := false
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					if !once {
						ready.Done()
					}
					return
				}
				now := time.Now()
				if !once && strings.HasPrefix(string(line), "retry:") {
					once = true
					ready.Done()
					continue
				}
				if s := string(line); strings.HasPrefix(s, "data: {\"pda\":\"") {
					pda, _, _ := strings.Cut(s[len("data: {\"pda\":\""):], "\"")
					if t, ok := sent.Load(pda); ok {
						lat[i] = append(lat[i], now.Sub(t.(time.Time)))
						got.Add(1)
					}
				}
			}
		}()
	}
	ready.Wait()
	opened := time.Since(openStart)
	rssOpen := rss(node.Process.Pid, "VmRSS")
	fmt.Fprintf(os.Stderr, "%d streams open in %s; node RSS %d MiB\n", clients, opened.Round(time.Millisecond), rssOpen>>20)

	with, err := wrkRun("list, streams open")
	if err != nil {
		return err
	}

	// New attestations, one at a time: each is awaited by every client.
	agents := seeded.Agents[:1]
	slot := uint64(1 << 40)
	for r := range rounds {
		recs := seed.NewAttestations(agents, 1, time.Now(), slot, uint64(r+1))
		recs[0].Commitment = attestation.Confirmed
		slot = recs[0].Slot
		sent.Store(recs[0].PDA, time.Now())
		if _, err := st.Apply(ctx, &store.Batch{Attestations: recs}); err != nil {
			return err
		}
		want := int64((r + 1) * clients)
		deadline := time.Now().Add(30 * time.Second)
		for got.Load() < want && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if got.Load() < want {
			return fmt.Errorf("round %d: %d of %d deliveries within 30 s", r, got.Load(), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	rssAfter := rss(node.Process.Pid, "VmRSS")
	rssPeak := rss(node.Process.Pid, "VmHWM")
	with2, err := wrkRun("list, streams open (again)")
	if err != nil {
		return err
	}
	for _, c := range conns {
		c.Close()
	}
	readers.Wait()
	// Wait for the node to see the streams close.
	time.Sleep(2 * time.Second)
	after, err := wrkRun("list, streams closed")
	if err != nil {
		return err
	}
	loadEnd := benchkit.LoadAvg()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*p))] }
	without, withMean := (before.RPS+after.RPS)/2, (with.RPS+with2.RPS)/2
	fmt.Printf("# Stream benchmark: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("Machine: %d cores shared with other work, GOMAXPROCS %d. Load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadStart, loadEnd)
	fmt.Printf("One `attestd serve` (rate limit off) over 20 agents and 20,000 attestations; %d stream clients (raw TCP, in the benchmark's process) from 127.0.0.1; %d attestations written one at a time with store.Apply (as the indexer writes them), each awaited by every client; wrk -t2 -c64 %s on the hot list `GET /attestations?limit=20`, run in the order: no streams, streams open, the latency rounds, streams open again, streams closed.\n\n",
		clients, rounds, dur)
	fmt.Println("| measure | value | target |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| deliveries (clients x attestations) | %d | %d |\n", len(all), clients*rounds)
	fmt.Printf("| ingest-to-client p50 | %s | |\n", pct(0.50).Round(time.Millisecond))
	fmt.Printf("| ingest-to-client p99 | %s | <= 250 ms |\n", pct(0.99).Round(time.Millisecond))
	fmt.Printf("| ingest-to-client max | %s | |\n", all[len(all)-1].Round(time.Millisecond))
	fmt.Printf("| time to open %d streams | %s | |\n", clients, opened.Round(time.Millisecond))
	fmt.Printf("| node RSS before the streams | %d MiB | |\n", rssIdle>>20)
	fmt.Printf("| node RSS with %d streams open | %d MiB | <= 300 MB |\n", clients, rssOpen>>20)
	fmt.Printf("| node RSS after the %d rounds | %d MiB (peak %d MiB) | <= 300 MB |\n", rounds, rssAfter>>20, rssPeak>>20)
	fmt.Printf("| hot list, no streams (before, after) | %.0f, %.0f req/s (p99 %s, %s) | |\n", before.RPS, after.RPS, before.P99, after.P99)
	fmt.Printf("| hot list, %d streams open (before, after the rounds) | %.0f, %.0f req/s (p99 %s, %s) | |\n", clients, with.RPS, with2.RPS, with.P99, with2.P99)
	fmt.Printf("| hot list with streams / without (means of two runs each) | %.0f%% | >= 90%% |\n", 100*withMean/without)
	if before.Non2xx || with.Non2xx || with2.Non2xx || after.Non2xx {
		fmt.Println("\n**wrk saw answers other than 2xx/3xx.**")
	}
	return nil
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
