// Command log-bench measures the transparency log (docs/log.md) on
// loopback, in one bounded run:
//
//   - append: finalized attestations stored at a backfill rate (-rate per
//     second for -feed) while an appender runs as attestd index runs it;
//     the lag of the log behind finality (the age of the oldest finalized
//     attestation without a leaf) sampled every 50 ms, and the appender's
//     rate on a queue of -backlog attestations;
//
//   - proof: hot inclusion proofs (GET /attestations/:id/proof, answered
//     from the node's memory) against the bare Fiber baseline, with wrk,
//     interleaved rounds as bench/edge does;
//
//   - restore: from `attestd restore` of a backup of -restore-n
//     attestations to serving the witnessed size, -gap leaves above it;
//
//   - scale: the proof's database work (the leaf by index, then the
//     O(log n) stored hashes in one query, and tlog.ProveRecord) at 100k
//     and at -big leaves, stored hashes and leaves bulk-loaded with COPY.
//
//     go run ./bench/log [-parts append,proof,scale] [-big 10000000]
//
// Run from the repository root after `make build` and
// `go build -o bin/baseline ./bench/baseline`. It uses
// ATTESTD_TEST_POSTGRES_URL and ATTESTD_TEST_REDIS_URL when set
// (`attestd stores` sets them) and otherwise starts its own throwaway
// servers. It prints Markdown.
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
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/bench/internal/wrk"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/litewitness"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog"
	"github.com/jackc/pgx/v5"
	"github.com/mr-tron/base58"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	parts := flag.String("parts", "append,proof,scale", "which parts to run (also: witness, restore)")
	rate := flag.Int("rate", 5000, "append: finalized attestations stored per second")
	feed := flag.Duration("feed", 20*time.Second, "append: how long attestations are stored at -rate")
	backlog := flag.Int("backlog", 100_000, "append: queued attestations the appender drains for its rate")
	dur := flag.Duration("duration", 5*time.Second, "proof: length of each wrk run")
	rounds := flag.Int("rounds", 3, "proof: rounds of baseline and proof runs")
	big := flag.Int64("big", 10_000_000, "scale: leaves of the large tree")
	samples := flag.Int("samples", 3000, "scale: proofs timed at each size")
	restoreN := flag.Int64("restore-n", 1_000_000, "restore: attestations in the backup")
	gap := flag.Int("gap", 20_000, "restore: attestations stored after the backup, regrown after the restore")
	flag.Parse()
	ctx := context.Background()
	b, err := newBench(ctx)
	if err != nil {
		fail(err)
	}
	defer b.stop()
	fmt.Printf("## Transparency log benchmark: %s\n\nMachine: %d cores (shared with other work). Load average at the start: %s.\n\n",
		time.Now().UTC().Format("2006-01-02T15:04Z"), nproc(), benchkit.LoadAvg())
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "append":
			err = b.appendPart(ctx, *rate, *feed, *backlog)
		case "proof":
			err = b.proofPart(ctx, *dur, *rounds)
		case "witness":
			err = b.witnessPart(ctx, *rate, *feed)
		case "scale":
			err = b.scalePart(ctx, *big, *samples)
		case "restore":
			err = b.restorePart(ctx, *restoreN, *gap)
		default:
			err = fmt.Errorf("unknown part %q", p)
		}
		if err != nil {
			b.stop() // fail exits: stop the stores and witnesses first
			fail(fmt.Errorf("%s: %w", p, err))
		}
	}
	fmt.Printf("Load average at the end: %s.\n", benchkit.LoadAvg())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "log-bench:", err)
	os.Exit(1)
}

type bench struct {
	tmp      string
	stores   *devstack.Scratch
	quiet    *slog.Logger
	skey     string
	vkey     string
	key      translog.Key
	cleanups []func()
}

func newBench(ctx context.Context) (*bench, error) {
	tmp, err := os.MkdirTemp("", "attestd-log-bench-")
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(tmp, 0o755)
	stores, err := devstack.StartScratch(ctx, tmp, os.Getenv(devstack.EnvTestPostgres), os.Getenv(devstack.EnvTestRedis))
	if err != nil {
		return nil, err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "bench.attestd.test/log")
	if err != nil {
		return nil, err
	}
	key, err := translog.ParseKey(skey)
	if err != nil {
		return nil, err
	}
	return &bench{tmp: tmp, stores: stores, quiet: slog.New(slog.NewTextHandler(io.Discard, nil)), skey: skey, vkey: vkey, key: key}, nil
}

func (b *bench) stop() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.stores.Stop()
	os.RemoveAll(b.tmp)
}

// database makes a migrated database with agents.
func (b *bench) database(ctx context.Context, name string, agents int) (*store.Store, string, []seed.Agent, func(), error) {
	url, drop, err := devstack.CreateDatabase(ctx, b.stores.PostgresURL, name)
	if err != nil {
		return nil, "", nil, nil, err
	}
	st, err := store.Open(ctx, url, store.Options{MaxConns: 8, QueryTimeout: 10 * time.Minute})
	if err != nil {
		drop()
		return nil, "", nil, nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		drop()
		return nil, "", nil, nil, err
	}
	var res seed.Result
	if agents > 0 {
		if res, err = seed.Run(ctx, st, seed.Options{Agents: agents, Attestations: 0, Seed: 1, Logger: b.quiet}); err != nil {
			st.Close()
			drop()
			return nil, "", nil, nil, err
		}
	}
	return st, url, res.Agents, func() { st.Close(); drop() }, nil
}

// records makes n finalized attestations (random bytes, one transaction
// each, unsigned: the log does not look at signatures).
func records(rng *mrand.Rand, agents []seed.Agent, n int, slot *uint64) []store.AttestationRecord {
	recs := make([]store.AttestationRecord, n)
	for i := range recs {
		var pda [32]byte
		var sig [64]byte
		for j := range pda {
			pda[j] = byte(rng.Uint32())
		}
		for j := range sig {
			sig[j] = byte(rng.Uint32())
		}
		*slot++
		r := &recs[i]
		r.Event = store.Event{TxSignature: base58.Encode(sig[:]), Slot: *slot, Commitment: attestation.Finalized}
		r.PDA = base58.Encode(pda[:])
		r.AgentPDA = agents[i%len(agents)].PDA.String()
		r.ActionType = attestation.ActionType(rng.IntN(int(attestation.NumActionTypes)))
		r.ActionHash = pda
		r.Timestamp = time.Unix(1_790_000_000+int64(*slot)/3, 0)
		r.Signature = sig
	}
	return recs
}

// appendPart: the appender at backfill rates.
func (b *bench) appendPart(ctx context.Context, rate int, feed time.Duration, backlog int) error {
	st, _, agents, done, err := b.database(ctx, "log_append", 50)
	if err != nil {
		return err
	}
	defer done()
	rng := mrand.New(mrand.NewPCG(1, 2))
	var slot uint64 = 1000
	// 1. The appender's rate on a standing queue.
	fmt.Fprintf(os.Stderr, "append: storing %d finalized attestations...\n", backlog)
	for made := 0; made < backlog; made += 5000 {
		if _, err := st.Apply(ctx, &store.Batch{Attestations: records(rng, agents, min(5000, backlog-made), &slot)}); err != nil {
			return err
		}
	}
	if err := st.SettleLogFrontier(ctx); err != nil {
		return err
	}
	cfg := translog.Config{Key: b.key, CheckpointInterval: 2 * time.Second, Batch: 5000, Poll: 200 * time.Millisecond}
	start := time.Now()
	var batches []time.Duration
	for {
		t0 := time.Now()
		res, err := st.LogAppend(ctx, cfg.Batch)
		if err != nil {
			return err
		}
		if res.Leaves == 0 {
			break
		}
		batches = append(batches, time.Since(t0))
	}
	drain := time.Since(start)
	slices.Sort(batches)
	fmt.Printf("### Append\n\nA queue of %d finalized attestations drained by appends of %d: %.0f leaves/s (%s; an append of %d took %s median, %s at most).\n\n",
		backlog, cfg.Batch, float64(backlog)/drain.Seconds(), drain.Round(time.Millisecond), cfg.Batch,
		batches[len(batches)/2].Round(time.Millisecond), batches[len(batches)-1].Round(time.Millisecond))

	// 2. Finality at rate/s while the appender runs as attestd index runs it.
	stopAppender, err := b.startAppender(ctx, st, cfg)
	if err != nil {
		return err
	}
	defer stopAppender()
	fr, err := feedFinalized(ctx, st, rng, agents, &slot, rate, feed)
	if err != nil {
		return err
	}
	stored, fed, behind, p50, p99 := fr.stored, fr.fed, fr.behind, fr.p50, fr.p99
	var maxLag atomic.Int64
	maxLag.Store(int64(fr.max))
	fmt.Printf("Finality at %d attestations/s for %s (%d stored in %s, %.0f/s achieved; the feeder fell behind its schedule by %s at most), the appender running with the defaults (appends of %d, poll %s, a checkpoint at most every %s). The log's lag behind finality, sampled every 50 ms (the age of the oldest finalized attestation without a leaf): p50 %s, p99 %s, max %s (target: at most 2 s).\n\n",
		rate, feed, stored, fed.Round(time.Millisecond), float64(stored)/fed.Seconds(), behind.Round(time.Millisecond), cfg.Batch, cfg.Poll, cfg.CheckpointInterval,
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), time.Duration(maxLag.Load()).Round(time.Millisecond))
	return nil
}

// proofPart: hot proofs against the bare Fiber baseline.
func (b *bench) proofPart(ctx context.Context, dur time.Duration, rounds int) error {
	for _, bin := range []string{"bin/attestd", "bin/baseline"} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("%s: run make build and go build -o bin/baseline ./bench/baseline first", bin)
		}
	}
	st, url, agents, done, err := b.database(ctx, "log_proof", 50)
	if err != nil {
		return err
	}
	defer done()
	rng := mrand.New(mrand.NewPCG(3, 4))
	var slot uint64 = 1000
	for range 20 {
		if _, err := st.Apply(ctx, &store.Batch{Attestations: records(rng, agents, 5000, &slot)}); err != nil {
			return err
		}
	}
	if err := st.SettleLogFrontier(ctx); err != nil {
		return err
	}
	for {
		res, err := st.LogAppend(ctx, 5000)
		if err != nil {
			return err
		}
		if res.Leaves == 0 {
			break
		}
	}
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Config: translog.Config{Key: b.key}, Logger: b.quiet})
	if err != nil {
		return err
	}
	cp, _, err := a.SignCheckpoint(ctx)
	if err != nil {
		return err
	}
	var pda string
	if err := st.Pool().QueryRow(ctx, `SELECT pda FROM log_leaves WHERE idx = $1`, cp.Size/3).Scan(&pda); err != nil {
		return err
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	env := append(os.Environ(), "DATABASE_URL="+url, "REDIS_URL="+b.stores.RedisURL, "ATTESTD_REDIS_PREFIX=bench"+hex.EncodeToString(pfx[:])+":",
		"ATTESTD_LOG_LEVEL=warn", "ATTESTD_RATE_LIMIT=0", "ATTESTD_MAX_CONNS_PER_IP=0", "ATTESTD_LOG_KEY="+b.key.VerifierKey)
	metrics := "127.0.0.1:" + strconv.Itoa(freePort())
	env = append(env, "ATTESTD_PPROF=on", "ATTESTD_METRICS_ADDR="+metrics)
	node := "127.0.0.1:" + strconv.Itoa(freePort())
	_, stopNode, err := benchkit.Start(ctx, append(env, "ATTESTD_HTTP_ADDR="+node), 10*time.Second, "bin/attestd", "http://"+node+"/api/v1/health", "serve")
	if err != nil {
		return err
	}
	defer stopNode()
	base := "127.0.0.1:" + strconv.Itoa(freePort())
	_, stopBase, err := benchkit.Start(ctx, env, 10*time.Second, "bin/baseline", "http://"+base+"/json", "-addr", base)
	if err != nil {
		return err
	}
	defer stopBase()
	proofURL := "http://" + node + "/api/v1/attestations/" + pda + "/proof"
	var body []byte
	for i := 0; ; i++ { // until the node serves the checkpoint's proof
		res, err := http.Get(proofURL)
		if err == nil {
			body, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if i == 100 {
			return fmt.Errorf("no proof answer: %v %s", err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var p struct {
		Data struct{ InclusionProof []string } `json:"data"`
	}
	_ = json.Unmarshal(body, &p)
	scen := []struct{ name, url string }{{"baseline", "http://" + base + "/json"}, {"proof", proofURL},
		{"attestation", "http://" + node + "/api/v1/attestations/" + pda}}
	res := map[string][]float64{}
	lat := map[string][2]string{}
	for r := range rounds {
		for i := range scen {
			s := scen[(i+r)%len(scen)]
			if prof := os.Getenv("LOG_BENCH_PPROF"); prof != "" && s.name == "proof" {
				go func() {
					time.Sleep(time.Second)
					_ = exec.Command("curl", "-s", "-o", prof, "http://"+metrics+"/debug/pprof/profile?seconds=3").Run()
				}()
			}
			out, err := exec.CommandContext(ctx, "wrk", "-t2", "-c64", "-d"+dur.String(), "--latency", s.url).CombinedOutput()
			if err != nil {
				return fmt.Errorf("wrk: %w\n%s", err, out)
			}
			f := wrk.Parse(string(out))
			if f.Non2xx {
				return fmt.Errorf("wrk %s: non-2xx answers", s.name)
			}
			fmt.Fprintf(os.Stderr, "[%s] %.0f req/s p99 %s\n", s.name, f.RPS, f.P99)
			res[s.name] = append(res[s.name], f.RPS)
			lat[s.name] = [2]string{f.P50, f.P99}
		}
	}
	share := func(name string) float64 {
		var shares []float64
		for i := range res[name] {
			shares = append(shares, res[name][i]/res["baseline"][i])
		}
		slices.Sort(shares)
		return shares[len(shares)/2]
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	fmt.Printf("### Hot proofs\n\nOne `attestd serve` (rate limit off, ATTESTD_LOG_KEY the verifier key) over a log of %d leaves; wrk -t2 -c64 on loopback, %d interleaved rounds of %s runs, each round starting one scenario later: the baseline (bin/baseline, a bare Fiber JSON handler), the proof, and the attestation itself. The proof answer is %d bytes (%d hashes), answered from the node's memory.\n\n",
		cp.Size, rounds, dur, len(body), len(p.Data.InclusionProof))
	fmt.Println("| scenario | requests/s (each round) | p50 | p99 |")
	fmt.Println("|---|---:|---:|---:|")
	for _, s := range scen {
		var each []string
		for _, v := range res[s.name] {
			each = append(each, fmt.Sprintf("%.0f", v))
		}
		fmt.Printf("| %s | %.0f (%s) | %s | %s |\n", s.name, mean(res[s.name]), strings.Join(each, ", "), lat[s.name][0], lat[s.name][1])
	}
	fmt.Printf("\nHot proof answers/s as a share of the bare Fiber baseline: %.0f%% (median of the rounds' ratios; target >= 80%%). The hot attestation read (GET /attestations/:id of the same attestation, finalized, from the node's memory) in the same rounds: %.0f%%.\n\n", 100*share("proof"), 100*share("attestation"))
	return nil
}

// scalePart: the proof's database work at 100k and at big leaves.
func (b *bench) scalePart(ctx context.Context, big int64, samples int) error {
	fmt.Printf("### Proofs at scale\n\nThe proof's database work, as the proof route does it on a cache miss: the leaf row by index, then the stored hashes of the audit path in one query (`id = ANY`), and tlog.ProveRecord; %d random leaves, one at a time. Leaves and stored hashes were bulk-loaded with COPY (leaves of 120 bytes; production leaves are about 270).\n\n", samples)
	fmt.Println("| leaves | stored hashes | load | p50 | p99 | max |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|")
	var p99s []time.Duration
	for _, n := range []int64{100_000, big} {
		st, _, _, done, err := b.database(ctx, "log_scale", 0)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := bulkLoad(ctx, st, n); err != nil {
			done()
			return err
		}
		loaded := time.Since(t0)
		rng := mrand.New(mrand.NewPCG(uint64(n), 9))
		var times []time.Duration
		hr := st.LogHashReader(ctx)
		for range samples {
			idx := rng.Int64N(n)
			s := time.Now()
			var pda string
			var leaf []byte
			if err := st.Pool().QueryRow(ctx, `SELECT pda, leaf FROM log_leaves WHERE idx = $1`, idx).Scan(&pda, &leaf); err != nil {
				done()
				return err
			}
			if _, err := tlog.ProveRecord(n, idx, hr); err != nil {
				done()
				return err
			}
			times = append(times, time.Since(s))
		}
		slices.Sort(times)
		p99 := times[len(times)*99/100]
		p99s = append(p99s, p99)
		fmt.Printf("| %d | %d | %s | %s | %s | %s |\n", n, tlog.StoredHashCount(n), loaded.Round(time.Second),
			times[len(times)/2].Round(time.Microsecond), p99.Round(time.Microsecond), times[len(times)-1].Round(time.Microsecond))
		done()
	}
	fmt.Printf("\nProof p99 at %d leaves as a multiple of 100k: %.2fx (target <= 2x).\n\n", big, float64(p99s[1])/float64(p99s[0]))
	return nil
}

// bulkLoad fills the log with n synthetic leaves: their stored hashes
// computed here (tlog.StoredHashes over a slice), both tables written with
// COPY, then the size row and ANALYZE.
func bulkLoad(ctx context.Context, st *store.Store, n int64) error {
	fmt.Fprintf(os.Stderr, "scale: computing %d leaves' stored hashes...\n", n)
	hashes := make([]tlog.Hash, 0, tlog.StoredHashCount(n))
	r := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = hashes[id]
		}
		return out, nil
	})
	for i := range n {
		hs, err := tlog.StoredHashes(i, leafOf(i), r)
		if err != nil {
			return err
		}
		hashes = append(hashes, hs...)
	}
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "scale: COPY %d hashes...\n", len(hashes))
	var i int64
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"log_hashes"}, []string{"id", "hash"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i >= int64(len(hashes)) {
			return nil, nil
		}
		i++
		return []any{i - 1, hashes[i-1][:]}, nil
	})); err != nil {
		return err
	}
	hashes = nil
	fmt.Fprintf(os.Stderr, "scale: COPY %d leaves...\n", n)
	i = 0
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"log_leaves"}, []string{"idx", "pda", "leaf"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		i++
		return []any{i - 1, pdaOf(i - 1), leafOf(i - 1)}, nil
	})); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `UPDATE log_size SET size = $1`, n); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE log_hashes, log_leaves`)
	return err
}

// startAppender runs an appender over st as attestd index runs it, once
// it leads; stop ends it and waits for it.
func (b *bench) startAppender(ctx context.Context, st *store.Store, cfg translog.Config) (func(), error) {
	a, err := translog.NewAppender(translog.AppenderDeps{Store: st, Config: cfg, Logger: b.quiet})
	if err != nil {
		return nil, fmt.Errorf("appender: %w", err)
	}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(actx) }()
	for !a.IsLeader() {
		time.Sleep(10 * time.Millisecond)
	}
	return func() { cancel(); wg.Wait() }, nil
}

func pdaOf(i int64) string { return fmt.Sprintf("bench%039d", i) }

func leafOf(i int64) []byte {
	return fmt.Appendf(nil, `{"pda":"%s","slot":%d,"txSignature":"%064d"}`, pdaOf(i), 1000+i, i)[:120]
}

func freePort() int {
	p, err := devstack.FreePort()
	if err != nil {
		fail(err)
	}
	return p
}

func nproc() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, strings.Count(string(b), "processor\t:"))
}

// feedResult is what feedFinalized measured.
type feedResult struct {
	stored        int
	fed, behind   time.Duration
	p50, p99, max time.Duration
}

// feedFinalized stores finalized attestations at rate/s for feed while
// the appender runs, sampling the log's lag behind finality every 50 ms,
// and waits until the log holds them all.
func feedFinalized(ctx context.Context, st *store.Store, rng *mrand.Rand, agents []seed.Agent, slot *uint64, rate int, feed time.Duration) (feedResult, error) {
	var r feedResult
	var maxLag atomic.Int64
	var lags []time.Duration
	var lagMu sync.Mutex
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	var sg sync.WaitGroup
	sg.Add(1)
	go func() {
		defer sg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			bl, err := st.LogBacklog(sctx)
			if err != nil {
				continue
			}
			lagMu.Lock()
			lags = append(lags, bl.Oldest)
			lagMu.Unlock()
			if int64(bl.Oldest) > maxLag.Load() {
				maxLag.Store(int64(bl.Oldest))
			}
		}
	}()
	const tick = 100 * time.Millisecond
	per := rate / int(time.Second/tick)
	fmt.Fprintf(os.Stderr, "feed: storing %d finalized/s for %s with the appender running...\n", rate, feed)
	stored := 0
	fstart := time.Now()
	behind := time.Duration(0)
	for next := fstart; time.Since(fstart) < feed; next = next.Add(tick) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		} else {
			behind = max(behind, -d)
		}
		if _, err := st.Apply(ctx, &store.Batch{Attestations: records(rng, agents, per, slot)}); err != nil {
			return r, err
		}
		// The feed is the whole chain: what it stored is whole (the
		// indexer's check of the chain is not measured here).
		if err := st.SettleLogFrontier(ctx); err != nil {
			return r, err
		}
		stored += per
	}
	fed := time.Since(fstart)
	// Until the log holds everything.
	for {
		bl, err := st.LogBacklog(ctx)
		if err != nil {
			return r, err
		}
		if bl.Queued == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopSampling()
	sg.Wait()
	lagMu.Lock()
	slices.Sort(lags)
	p50, p99 := lags[len(lags)/2], lags[len(lags)*99/100]
	lagMu.Unlock()
	r.stored, r.fed, r.behind, r.p50, r.p99, r.max = stored, fed, behind, p50, p99, time.Duration(maxLag.Load())
	return r, nil
}

// witnessPart: finalized attestations at rate/s for feed with the
// appender sending every checkpoint to two local litewitness processes
// (torchwood's, unmodified; quorum 2): how long after its signature each
// checkpoint had both cosignatures, how many were superseded before a
// witness was sent them, and the log's lag behind finality meanwhile.
func (b *bench) witnessPart(ctx context.Context, rate int, feed time.Duration) error {
	st, _, agents, done, err := b.database(ctx, "log_witness", 50)
	if err != nil {
		return err
	}
	defer done()
	bin, err := litewitness.Binary(ctx, ".")
	if err != nil {
		return err
	}
	var opts []litewitness.Options
	for i := range 2 {
		dir := filepath.Join(b.tmp, fmt.Sprintf("witness%d", i+1))
		opts = append(opts, litewitness.Options{Binary: bin, Dir: dir, Name: fmt.Sprintf("witness%d.bench.test/w", i+1)})
	}
	started, items, err := litewitness.ForLog(ctx, b.key.Name, b.vkey, opts...)
	if err != nil {
		return err
	}
	for _, w := range started {
		b.cleanups = append(b.cleanups, w.Stop)
	}
	ws, err := translog.ParseWitnesses(items)
	if err != nil {
		return err
	}
	cfg := translog.Config{Key: b.key, CheckpointInterval: 2 * time.Second, Batch: 5000, Poll: 200 * time.Millisecond, Witnesses: ws, Quorum: 2}
	stopAppender, err := b.startAppender(ctx, st, cfg)
	if err != nil {
		return err
	}
	defer stopAppender()
	rng := mrand.New(mrand.NewPCG(3, 4))
	var slot uint64 = 1000
	fmt.Fprintf(os.Stderr, "witness: storing %d finalized/s for %s, two litewitnesses cosigning...\n", rate, feed)
	fr, err := feedFinalized(ctx, st, rng, agents, &slot, rate, feed)
	if err != nil {
		return err
	}
	// The last checkpoint's cosignatures (the newest is sent to both).
	var newest int64
	if err := st.Pool().QueryRow(ctx, `SELECT coalesce(max(size), 0) FROM log_checkpoints`).Scan(&newest); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM log_cosignatures WHERE size = $1`, newest).Scan(&n); err != nil {
			return err
		}
		if n == 2 {
			break
		}
	}
	rows, err := st.Pool().Query(ctx, `SELECT c.size, extract(epoch FROM max(s.cosigned_at) - c.signed_at)::float8, count(s.witness)
		FROM log_checkpoints c LEFT JOIN log_cosignatures s USING (origin, size) WHERE c.size > 0 GROUP BY c.origin, c.size, c.signed_at ORDER BY c.size`)
	if err != nil {
		return err
	}
	var both []time.Duration
	var total, one, none int
	for rows.Next() {
		var size int64
		var secs *float64
		var n int
		if err := rows.Scan(&size, &secs, &n); err != nil {
			rows.Close()
			return err
		}
		total++
		switch {
		case n == 2 && secs != nil:
			both = append(both, time.Duration(*secs*float64(time.Second)))
		case n == 1:
			one++
		default:
			none++
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(both) == 0 {
		return fmt.Errorf("no checkpoint got both cosignatures (%d signed)", total)
	}
	slices.Sort(both)
	fmt.Printf("### Witnesses\n\nFinality at %d attestations/s for %s (%d stored in %s, %.0f/s achieved; the feeder fell behind its schedule by %s at most), the appender sending each checkpoint to two local litewitness processes (torchwood v0.6.1, unmodified, keys in ssh-agents; quorum 2), checkpoints at most every %s.\n\n",
		rate, feed, fr.stored, fr.fed.Round(time.Millisecond), float64(fr.stored)/fr.fed.Seconds(), fr.behind.Round(time.Millisecond), cfg.CheckpointInterval)
	fmt.Printf("| checkpoints signed | cosigned by both | by one (superseded for the other) | by none | signed to both cosignatures p50 | p99 | max |\n|---:|---:|---:|---:|---:|---:|---:|\n| %d | %d | %d | %d | %s | %s | %s |\n\n",
		total, len(both), one, none, both[len(both)/2].Round(time.Millisecond), both[len(both)*99/100].Round(time.Millisecond), both[len(both)-1].Round(time.Millisecond))
	fmt.Printf("The log's lag behind finality meanwhile (appending never waits for witnesses): p50 %s, p99 %s, max %s (target: at most 2 s).\n\n",
		fr.p50.Round(time.Millisecond), fr.p99.Round(time.Millisecond), fr.max.Round(time.Millisecond))
	return nil
}
