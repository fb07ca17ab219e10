package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/dataset"
)

// fileServer is the bare file server: net/http.ServeContent of one file
// (opened per request, as a file server does), on /file; /ready answers
// 200.
func fileServer(args []string) {
	fs := flag.NewFlagSet("fileserver", flag.ExitOnError)
	file := fs.String("file", "", "the file served")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	_ = fs.Parse(args)
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(*file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", dataset.MIMEParquet)
		http.ServeContent(w, r, "", st.ModTime(), f)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fail(srv.ListenAndServe())
}

// loadResult is one run of the range readers.
type loadResult struct {
	bytes, requests int64
	elapsed         time.Duration
	p50, p99        time.Duration
	serverCPU       time.Duration
}

func (r loadResult) mbps() float64 { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }

// rangeLoad runs clients readers, each asking for random ranges of
// rangeBytes of the size-byte file at u, one after the other on a
// keep-alive connection, for dur.
func rangeLoad(ctx context.Context, u string, size, rangeBytes int64, clients int, dur time.Duration, seed uint64) (loadResult, error) {
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	var mu sync.Mutex
	var res loadResult
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(dur)
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(seed, uint64(g)))
			buf := make([]byte, 64<<10)
			var n, reqs int64
			var my []time.Duration
			var err error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				off := rng.Int64N(size - rangeBytes + 1)
				t0 := time.Now()
				var got int64
				if got, err = getRange(ctx, hc, u, off, rangeBytes, buf); err != nil {
					break
				}
				my = append(my, time.Since(t0))
				n += got
				reqs++
			}
			mu.Lock()
			res.bytes += n
			res.requests += reqs
			lat = append(lat, my...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.p50, res.p99 = benchkit.Percentile(lat, 50), benchkit.Percentile(lat, 99)
	return res, firstErr
}

// getRange reads bytes [off, off+n) of the file at u and returns how many
// it read (n, or an error).
func getRange(ctx context.Context, hc *http.Client, u string, off, n int64, buf []byte) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10))
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	got, err := io.CopyBuffer(io.Discard, res.Body, buf)
	if err != nil {
		return got, err
	}
	if res.StatusCode != http.StatusPartialContent || got != n {
		return got, fmt.Errorf("GET %s bytes %d+%d: %d, %d bytes", u, off, n, res.StatusCode, got)
	}
	return got, nil
}

// servePart: one day's file from the node against the bare file server.
func (b *bench) servePart(ctx context.Context, w io.Writer, c *cutLog) error {
	idx, err := readIndex(c.bucketDir)
	if err != nil {
		return err
	}
	days := slices.Clone(idx.Days)
	slices.SortFunc(days, func(x, y dataset.IndexDay) int { return int(x.Bytes - y.Bytes) })
	d := days[0]
	for _, x := range days {
		if x.Bytes <= b.o.serveMB*1_000_000 {
			d = x
		}
	}
	path := filepath.Join(c.bucketDir, prefix, d.File)
	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	size := int64(len(file))
	if size < b.o.rangeBytes {
		return fmt.Errorf("%s holds %d bytes, less than one range of %d", d.File, size, b.o.rangeBytes)
	}
	base, node, stopNode, err := b.startNode(ctx, c)
	if err != nil {
		return err
	}
	defer stopNode()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	bareAddr := "127.0.0.1:" + strconv.Itoa(freePort())
	bare, stopBare, err := benchkit.Start(ctx, os.Environ(), 5*time.Second, exe, "http://"+bareAddr+"/ready", "fileserver", "-file", path, "-addr", bareAddr)
	if err != nil {
		return err
	}
	defer stopBare()
	type server struct {
		name, url string
		cmd       *exec.Cmd
	}
	servers := []server{{"bare Go file server (net/http.ServeContent)", "http://" + bareAddr + "/file", bare},
		{"attestd serve (/dataset/, guard off)", base + "/dataset/" + d.File, node}}
	// Both serve the file's bytes.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: time.Minute}
	rng := mrand.New(mrand.NewPCG(7, 7))
	for _, s := range servers {
		for _, off := range []int64{0, size - b.o.rangeBytes, rng.Int64N(size - b.o.rangeBytes)} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+b.o.rangeBytes-1))
			res, err := hc.Do(req)
			if err != nil {
				return err
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusPartialContent || !bytes.Equal(got, file[off:off+b.o.rangeBytes]) {
				return fmt.Errorf("%s: the range at %d is not the file's bytes (%d, %v)", s.name, off, res.StatusCode, err)
			}
		}
	}
	hc.CloseIdleConnections()
	file = nil
	// Warm both, then interleaved rounds.
	for _, s := range servers {
		if _, err := rangeLoad(ctx, s.url, size, b.o.rangeBytes, b.o.clients, 2*time.Second, 99); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	results := make([][]loadResult, len(servers))
	for r := range b.o.rounds {
		for i := range servers {
			k := (i + r) % len(servers)
			s := servers[k]
			cpu0 := procCPU(s.cmd.Process.Pid)
			res, err := rangeLoad(ctx, s.url, size, b.o.rangeBytes, b.o.clients, b.o.duration, uint64(r*10+k))
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			res.serverCPU = procCPU(s.cmd.Process.Pid) - cpu0
			logf("serve: round %d: %s: %.0f MB/s (%d ranges, p99 %s)", r+1, s.name, res.mbps(), res.requests, res.p99.Round(time.Millisecond))
			results[k] = append(results[k], res)
		}
	}
	mean := func(rs []loadResult) (mbps float64, each []string) {
		for _, r := range rs {
			mbps += r.mbps() / float64(len(rs))
			each = append(each, fmt.Sprintf("%.0f", r.mbps()))
		}
		return mbps, each
	}
	fmt.Fprintf(w, "### Serve\n\nThe day %s of the second log (%d rows, %.1f MB), from its file:// bucket on the same filesystem. %d concurrent "+
		"readers (one Go program, http.Client keep-alive, one connection each), each asking for a random range of %d bytes after the other "+
		"(Range: bytes=a-b, 206, every byte read), %d interleaved rounds of %s per server after a 2 s warm-up, each round starting with "+
		"the other server. The node is a real `attestd serve` (ATTESTD_DATASET_BUCKET=file://…, the dataset's guard off for the bench: "+
		"ATTESTD_DATASET_RATE=0 and ATTESTD_DATASET_MIB_RATE=0, no limit); the bare server is a Go net/http.ServeContent of the same "+
		"file on disk (its own process; sendfile). Before the runs, three ranges of each were compared with the file's bytes.\n\n",
		d.Day, d.Rows, float64(size)/1e6, b.o.clients, b.o.rangeBytes, b.o.rounds, b.o.duration)
	fmt.Fprintf(w, "| server | MB/s (each round) | ranges/s | p50 | p99 | server CPU per GB |\n|---|---:|---:|---:|---:|---:|\n")
	var mbps []float64
	for i, s := range servers {
		m, each := mean(results[i])
		mbps = append(mbps, m)
		var reqs, by int64
		var el, cpu time.Duration
		for _, r := range results[i] {
			reqs += r.requests
			by += r.bytes
			el += r.elapsed
			cpu += r.serverCPU
		}
		last := results[i][len(results[i])-1]
		fmt.Fprintf(w, "| %s | %.0f (%s) | %.0f | %s | %s | %.2f s |\n", s.name, m, strings.Join(each, ", "), float64(reqs)/el.Seconds(),
			last.p50.Round(100*time.Microsecond), last.p99.Round(100*time.Microsecond), cpu.Seconds()/(float64(by)/1e9))
	}
	var ratios []string
	for r := range b.o.rounds {
		ratios = append(ratios, fmt.Sprintf("%.0f%%", 100*results[1][r].mbps()/results[0][r].mbps()))
	}
	fmt.Fprintf(w, "\nThe node's throughput as a share of the bare file server's: %.0f%% (the rounds: %s; goal >= 80%%). "+
		"p50 and p99 are of the last round; the client runs on the same 2 cores.\n\n", 100*mbps[1]/mbps[0], strings.Join(ratios, ", "))
	return nil
}
