// Command streambudget measures what live streams whose clients never
// read cost a node in memory: streams resumed from an old cursor (each
// catches up from PostgreSQL, so the node reads rows for it that it
// cannot write), opened up to the per-IP cap from many addresses, against
// the same number of never-reading streams opened without a cursor (live:
// nothing to hold for them beyond the connection). The difference between
// the two peaks of the node's resident memory is what the catch-ups hold,
// which the node's stream buffer budget (ATTESTD_STREAM_BUFFER_TOTAL_MB)
// bounds.
//
//	go run ./bench/streambudget [-addresses 100] [-per-ip 32] [-hold 30s] [-bin bin/attestd] [-baseline path]
//
// Run from the repository root after `make build`. Each scenario runs a
// fresh `attestd serve` (so one scenario's heap is not reused by the
// next) over the same database: 20 agents and 20,000 attestations, more
// than the node's in-memory ring, so a stream from the oldest cursor
// reads PostgreSQL. Clients connect from 127.0.0.2 up (loopback, one
// address each), read the answer's headers, then never read again; the
// node's write timeout is raised so that none is dropped while measured.
// -baseline runs the same scenarios on another binary (an older build) in
// the same run. Bounded: addresses x per-ip connections, each scenario
// -hold long. It uses ATTESTD_TEST_POSTGRES_URL and ATTESTD_TEST_REDIS_URL
// when set (`attestd stores` sets them). It prints Markdown.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
)

func main() {
	addresses := flag.Int("addresses", 100, "client addresses (127.0.0.2 up)")
	perIP := flag.Int("per-ip", 32, "streams per address (ATTESTD_STREAM_MAX_PER_IP's default)")
	hold := flag.Duration("hold", 30*time.Second, "how long each scenario keeps its streams open, sampling the node's memory")
	bin := flag.String("bin", "bin/attestd", "the binary measured")
	baseline := flag.String("baseline", "", "another binary to run the same scenarios on (an older build), or none")
	flag.Parse()
	if err := run(context.Background(), *addresses, *perIP, *hold, *bin, *baseline); err != nil {
		fmt.Fprintln(os.Stderr, "streambudget:", err)
		os.Exit(1)
	}
}

// result is one scenario's figures.
type result struct {
	bin, scenario       string
	idle, peak          int64 // RSS, bytes
	opened, refused     int   // streams answered 200, other answers
	buffered, ended     int64 // peak attestd_stream_buffered_bytes (-1: not exported), streams ended for the budget
	openAtEnd           int64
	took                time.Duration // to open every stream
	budgetMiB, streamKB int
}

func run(ctx context.Context, addresses, perIP int, hold time.Duration, bin, baseline string) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if need := uint64(2*addresses*perIP + 512); lim.Cur < need {
		return fmt.Errorf("open-file limit %d, need %d (raise ulimit -n)", lim.Cur, need)
	}
	if addresses < 1 || addresses > 250 || perIP < 1 {
		return errors.New("-addresses from 1 to 250 (127.0.0.2 to .251), -per-ip at least 1")
	}
	bins := []string{bin}
	if baseline != "" {
		bins = append(bins, baseline)
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%s: %w (run make build first)", b, err)
		}
	}
	bs, err := benchkit.OpenStores(ctx, "streambudget_bench", store.Options{MaxConns: 4})
	if err != nil {
		return err
	}
	defer bs.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	fmt.Fprintln(os.Stderr, "seeding 20,000 attestations...")
	if _, err := seed.Run(ctx, bs.Store, seed.Options{Agents: 20, Attestations: 20_000, Seed: 1, Logger: quiet}); err != nil {
		return err
	}
	if _, err := bs.Store.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return err
	}
	rows, _, _, err := bs.Store.StreamEvents(ctx, 0, 1<<62, store.StreamFilter{}, 10)
	if err != nil {
		return err
	}
	cursor := ""
	for _, r := range rows {
		if r.Kind == store.StreamAttestation {
			c := r.Cursor()
			cursor = httpapi.EncodeCursor(&c)
			break
		}
	}
	if cursor == "" {
		return errors.New("no attestation at the start of the stream log")
	}
	loadStart := benchkit.LoadAvg()
	var results []result
	for _, b := range bins {
		for _, sc := range []struct{ name, cursor string }{{"live (no cursor)", ""}, {"catch-up (oldest cursor)", cursor}} {
			r, err := scenario(ctx, bs, b, sc.name, sc.cursor, addresses, perIP, hold)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", b, sc.name, err)
			}
			results = append(results, r)
		}
	}
	loadEnd := benchkit.LoadAvg()

	fmt.Printf("# Stream memory with never-reading clients: %s\n\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Printf("Machine: %d cores shared with other work, GOMAXPROCS %d. Load average (1, 5, 15 min) %s at the start, %s at the end.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), loadStart, loadEnd)
	fmt.Printf("Each scenario: a fresh `attestd serve` over 20 agents and 20,000 attestations (more than the node's ring of 8,192), "+
		"%d addresses x %d streams (the per-IP cap) = %d streams whose clients read the answer's headers and then nothing, held %s "+
		"(ATTESTD_STREAM_WRITE_TIMEOUT raised to 10m so that none is dropped meanwhile); the node's RSS sampled every 100 ms.\n\n",
		addresses, perIP, addresses*perIP, hold)
	fmt.Println("| binary | streams | opened (refused) | time to open | RSS idle | RSS peak | peak - idle | buffered bytes peak | ended for the budget | open at the end |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		buf := "not exported"
		if r.buffered >= 0 {
			buf = fmt.Sprintf("%.1f MiB", float64(r.buffered)/(1<<20))
		}
		fmt.Printf("| %s | %s | %d (%d) | %s | %d MiB | %d MiB | %d MiB | %s | %d | %d |\n", r.bin, r.scenario, r.opened, r.refused,
			r.took.Round(100*time.Millisecond), r.idle>>20, r.peak>>20, (r.peak-r.idle)>>20, buf, r.ended, r.openAtEnd)
	}
	fmt.Println()
	for i := 0; i+1 < len(results); i += 2 {
		live, catch := results[i], results[i+1]
		extra := catch.peak - live.peak
		fmt.Printf("- %s: the catch-up streams' RSS peak is %d MiB over the live streams' (%.0f KiB a stream)", live.bin, extra>>20,
			float64(extra)/1024/float64(max(catch.opened, 1)))
		if catch.buffered >= 0 {
			fmt.Printf("; the stream buffer budget is %d MiB (%d KiB a stream): %s", catch.budgetMiB, catch.streamKB,
				map[bool]string{true: "within it", false: "**over it**"}[extra <= int64(catch.budgetMiB)<<20])
		}
		fmt.Println(".")
	}
	return nil
}

// scenario starts a node, opens the streams, samples its memory for hold,
// then closes them and stops the node.
func scenario(ctx context.Context, bs *benchkit.Stores, bin, name, cursor string, addresses, perIP int, hold time.Duration) (result, error) {
	r := result{bin: bin, scenario: name, buffered: -1, budgetMiB: 64, streamKB: 256}
	port, err := devstack.FreePort()
	if err != nil {
		return r, err
	}
	mport, err := devstack.FreePort()
	if err != nil {
		return r, err
	}
	addr, maddr := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(mport)
	env := append(os.Environ(), "DATABASE_URL="+bs.DatabaseURL, "REDIS_URL="+bs.RedisURL, "ATTESTD_REDIS_PREFIX=streambudget:",
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_METRICS_ADDR="+maddr, "ATTESTD_HTTP_ADDR="+addr,
		"ATTESTD_STREAM_MAX_PER_IP="+strconv.Itoa(perIP), "ATTESTD_STREAM_WRITE_TIMEOUT=10m")
	for _, kv := range os.Environ() { // the budget the node runs with, for the report
		if v, ok := strings.CutPrefix(kv, "ATTESTD_STREAM_BUFFER_TOTAL_MB="); ok {
			r.budgetMiB, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(kv, "ATTESTD_STREAM_BUFFER_KB="); ok {
			r.streamKB, _ = strconv.Atoi(v)
		}
	}
	node, stop, err := benchkit.Start(ctx, env, 15*time.Second, bin, "http://"+addr+"/api/v1/health", "serve")
	if err != nil {
		return r, err
	}
	defer stop()
	pid := node.Process.Pid
	time.Sleep(time.Second)
	r.idle = rss(pid)
	fmt.Fprintf(os.Stderr, "[%s, %s] RSS idle %d MiB; opening %d streams...\n", bin, name, r.idle>>20, addresses*perIP)

	var (
		mu    sync.Mutex
		conns []net.Conn
		peak        = r.idle
		most  int64 = -1
		done        = make(chan struct{})
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() { // the sampler
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := rss(pid)
				b, _ := metric(maddr, "attestd_stream_buffered_bytes")
				mu.Lock()
				peak = max(peak, v)
				if b >= 0 {
					most = max(most, b)
				}
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	sem := make(chan struct{}, 16) // openers at once: the node bounds its starting reads of PostgreSQL too
	var opened, refused sync.Map
	for a := range addresses {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+a))}
		for range perIP {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c, status, err := open(local, addr, cursor)
				if err != nil {
					refused.Store(fmt.Sprint(local, err), true)
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				if status == 200 {
					opened.Store(c, true)
				} else {
					refused.Store(c, true)
				}
			}()
		}
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	r.took = time.Since(start)
	count := func(m *sync.Map) (n int) {
		m.Range(func(any, any) bool { n++; return true })
		return n
	}
	r.opened, r.refused = count(&opened), count(&refused)
	fmt.Fprintf(os.Stderr, "[%s, %s] %d opened, %d refused in %s\n", bin, name, r.opened, r.refused, r.took.Round(time.Millisecond))
	time.Sleep(hold)
	close(done)
	wg.Wait()
	r.peak, r.buffered = peak, most
	r.ended, _ = metric(maddr, `attestd_stream_ended_total{why="budget"}`)
	r.ended = max(r.ended, 0)
	r.openAtEnd, _ = metric(maddr, "attestd_stream_open")
	fmt.Fprintf(os.Stderr, "[%s, %s] RSS peak %d MiB, buffered peak %d, %d ended for the budget, %d open\n",
		bin, name, r.peak>>20, r.buffered, r.ended, r.openAtEnd)
	for _, c := range conns {
		c.Close()
	}
	return r, nil
}

// open connects from local to addr, asks for the stream (from cursor when
// set) with a 4 KiB receive buffer, and reads the answer's status line and
// headers one byte at a time: nothing of the body is read, then or later.
func open(local *net.TCPAddr, addr, cursor string) (net.Conn, int, error) {
	d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, 0, err
	}
	req := "GET /api/v1/attestations/stream HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n"
	if cursor != "" {
		req += "Last-Event-ID: " + cursor + "\r\n"
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, 0, err
	}
	var head []byte
	var b [1]byte
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := c.Read(b[:]); err != nil {
			c.Close()
			return nil, 0, fmt.Errorf("read the answer's headers: %w", err)
		}
		if head = append(head, b[0]); len(head) > 8<<10 {
			c.Close()
			return nil, 0, errors.New("answer headers over 8 KiB")
		}
	}
	_ = c.SetDeadline(time.Time{})
	line, _, _ := strings.Cut(string(head), "\r\n")
	f := strings.Fields(line)
	if len(f) < 2 {
		c.Close()
		return nil, 0, fmt.Errorf("status line %q", line)
	}
	status, _ := strconv.Atoi(f[1])
	return c, status, nil
}

// metric reads one sample of the node's /metrics (-1 when absent).
func metric(addr, name string) (int64, error) {
	cl := http.Client{Timeout: 2 * time.Second}
	res, err := cl.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1, err
			}
			return int64(f), nil
		}
	}
	return -1, sc.Err()
}

// rss is the process's resident memory, in bytes.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
