// Command dataset-bench measures the daily dataset (docs/dataset.md) on
// loopback, in one bounded run:
//
//   - backfill: a log of -n finalized attestations spread over -days
//     days, loaded fast (COPY of attestations, of their leaves as
//     attestation.LogLeaf writes them and of the stored hashes computed
//     here with tlog.StoredHashes; the log's size and order frontier; a
//     checkpoint signed with the bench's key, a log without witnesses),
//     then `attestd dataset --once` (a child process, under GNU time for
//     its peak RSS) cuts every day into a file:// bucket: rows per
//     second, days, bytes, peak RSS. Then a second log of a day of
//     -bigday/4 rows and a day of -bigday rows, each day cut by its own
//     child: the peak RSS of a round does not follow the size of the day
//     (a file is written one row group, 32,768 rows, at a time). Every
//     file written is checked with dataset.VerifyFile (readable, every row
//     in place, the rows rebuild the signed checkpoint's root) and each
//     day's rows counted against what was generated before anything is
//     reported;
//
//   - size: one day's file against the pages of GET /api/v1/attestations
//     (limit=100, Accept-Encoding: gzip) that hold the same rows, as a
//     real `attestd serve` answers them: bytes per attestation;
//
//   - serve: the largest day's file of at most -serve-mb MB, read by -c
//     concurrent clients asking for random -range byte ranges for
//     -duration, from `attestd serve` (the dataset's guard off:
//     ATTESTD_DATASET_RATE=0, ATTESTD_DATASET_MIB_RATE=0) and from a bare
//     Go file server (net/http.ServeContent of the same file, its own
//     process), in -rounds interleaved rounds: MB/s of each and the ratio.
//
//     go run ./bench/dataset [-parts backfill,size,serve] [-n 10000000] [-days 365] [-dir /dev/shm]
//
// Run from the repository root after `make build` (or name the binary
// with -attestd); it needs /usr/bin/time (GNU time). It uses
// ATTESTD_TEST_POSTGRES_URL and ATTESTD_TEST_REDIS_URL when set
// (`attestd stores` sets them) and otherwise starts its own throwaway
// servers under -dir, where the buckets live too: the first log takes
// about 1.7 GB per million attestations there (1.4 the database, 0.3
// the files; it is dropped before the second log, of 1.25 times
// -bigday, is loaded). It prints Markdown; progress goes to stderr.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/attestd/attestd/bench/internal/benchkit"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/translog"
	"golang.org/x/mod/sumdb/note"
)

type options struct {
	parts      map[string]bool
	n          int64
	days       int
	bigday     int64
	attestd    string
	dir        string
	duration   time.Duration
	rounds     int
	clients    int
	rangeBytes int64
	serveMB    int64
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "fileserver" { // the serve part's bare file server
		fileServer(os.Args[2:])
		return
	}
	var o options
	parts := flag.String("parts", "backfill,size,serve", "which parts to run")
	flag.Int64Var(&o.n, "n", 10_000_000, "backfill: finalized attestations in the log")
	flag.IntVar(&o.days, "days", 365, "backfill: days the attestations are spread over")
	flag.Int64Var(&o.bigday, "bigday", 1_000_000, "backfill: rows of the one large day of the second log (after a day of a quarter of that)")
	flag.StringVar(&o.attestd, "attestd", "bin/attestd", "the attestd binary (make build)")
	flag.StringVar(&o.dir, "dir", "", "where the throwaway servers and the buckets live (default: $TMPDIR)")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "serve: length of each run")
	flag.IntVar(&o.rounds, "rounds", 2, "serve: rounds of the bare server and the node")
	flag.IntVar(&o.clients, "c", 64, "serve: concurrent range readers")
	flag.Int64Var(&o.rangeBytes, "range", 1<<20, "serve: bytes of each range read")
	flag.Int64Var(&o.serveMB, "serve-mb", 100, "serve: the largest day's file of at most this many MB is served")
	flag.Parse()
	o.parts = map[string]bool{}
	for _, p := range strings.Split(*parts, ",") {
		switch p {
		case "backfill", "size", "serve":
			o.parts[p] = true
		default:
			fail(fmt.Errorf("unknown part %q (backfill, size, serve)", p))
		}
	}
	if o.n < int64(o.days) || o.days < 1 || o.bigday < 4 {
		fail(fmt.Errorf("want -n >= -days >= 1 and -bigday >= 4"))
	}
	if _, err := os.Stat(o.attestd); err != nil {
		fail(fmt.Errorf("%s: run make build first, or name the binary with -attestd", o.attestd))
	}
	if _, err := os.Stat(timeBin); err != nil {
		fail(fmt.Errorf("%s (GNU time, which measures the rounds' peak RSS): apt-get install time", timeBin))
	}
	ctx := context.Background()
	b, err := newBench(ctx, o)
	if err != nil {
		fail(err)
	}
	fmt.Printf("## Dataset benchmark: %s\n\nMachine: %d cores (shared with other work). Load average at the start: %s. Throwaway PostgreSQL (fsync off) and buckets under %s.\n\n",
		time.Now().UTC().Format("2006-01-02T15:04Z"), runtime.NumCPU(), benchkit.LoadAvg(), b.where())
	if err := b.run(ctx); err != nil {
		b.stop()
		fail(err)
	}
	b.stop()
	fmt.Printf("Load average at the end: %s.\n", benchkit.LoadAvg())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dataset-bench:", err)
	os.Exit(1)
}

type bench struct {
	o      options
	tmp    string
	stores *devstack.Scratch
	quiet  *slog.Logger
	key    translog.Key
}

func newBench(ctx context.Context, o options) (*bench, error) {
	tmp, err := os.MkdirTemp(o.dir, "attestd-dataset-bench-")
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(tmp, 0o755) // readable by the PostgreSQL server's account when it is not ours
	stores, err := devstack.StartScratch(ctx, tmp, os.Getenv(devstack.EnvTestPostgres), os.Getenv(devstack.EnvTestRedis))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	skey, _, err := note.GenerateKey(rand.Reader, "bench.attestd.test/dataset")
	if err != nil {
		return nil, err
	}
	key, err := translog.ParseKey(skey)
	if err != nil {
		return nil, err
	}
	return &bench{o: o, tmp: tmp, stores: stores, quiet: slog.New(slog.NewTextHandler(io.Discard, nil)), key: key}, nil
}

func (b *bench) stop() {
	b.stores.Stop()
	os.RemoveAll(b.tmp)
}

// where says where the bench's files are.
func (b *bench) where() string {
	if os.Getenv(devstack.EnvTestPostgres) != "" {
		return filepath.Dir(b.tmp) + " (PostgreSQL: ATTESTD_TEST_POSTGRES_URL's)"
	}
	return filepath.Dir(b.tmp)
}

// run runs the parts in their order: the first log (backfill, size),
// then the second (backfill, serve). A part that needs a log loads it
// even when the backfill part is not asked for (its figures are then
// not printed). The sections are printed in the order backfill, size,
// serve, once all ran (or one failed).
func (b *bench) run(ctx context.Context) (err error) {
	p := b.o.parts
	var bf backfillReport
	var size, serve strings.Builder
	defer func() {
		if p["backfill"] && (bf.main.rows > 0 || bf.big != nil) {
			b.printBackfill(os.Stdout, bf)
		}
		fmt.Print(size.String(), serve.String())
	}()
	if p["backfill"] || p["size"] {
		main, err := b.mainLog(ctx)
		if err != nil {
			return fmt.Errorf("backfill: %w", err)
		}
		bf.main = main.report
		if p["size"] {
			err = b.sizePart(ctx, &size, main)
		}
		main.close()
		if err != nil {
			return fmt.Errorf("size: %w", err)
		}
	}
	if p["backfill"] || p["serve"] {
		big, err := b.bigLog(ctx)
		if err != nil {
			return fmt.Errorf("backfill (the large day): %w", err)
		}
		bf.big = big.reports
		if p["serve"] {
			err = b.servePart(ctx, &serve, big)
		}
		big.close()
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	return nil
}
