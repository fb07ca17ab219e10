package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/attestd/attestd/client"
	"github.com/attestd/attestd/internal/dataset"
)

// prefix is the objects' key prefix in the buckets (the default).
const prefix = "dataset/v1/"

// timeBin is GNU time, which measures each round's peak RSS.
const timeBin = "/usr/bin/time"

// roundRun is one `attestd dataset --once` and what it cut.
type roundRun struct {
	label   string
	days    []dataset.IndexDay // the days this run cut
	rows    int64
	bytes   int64
	largest int64 // rows of the largest day cut
	wall    time.Duration
	cpu     time.Duration // user + system
	maxRSS  int64         // bytes: attestd's ru_maxrss, as GNU time reads it
	verify  time.Duration // dataset.VerifyFile of the days cut
}

func (r roundRun) rowsPerSecond() float64 { return float64(r.rows) / r.wall.Seconds() }

// mainReport is the first log's backfill.
type mainReport struct {
	rows, leaves int64
	days         int
	load         time.Duration
	dbBytes      int64
	dropped      []string
	round        roundRun
}

type backfillReport struct {
	main mainReport
	big  []roundRun
}

// cutLog is a loaded log and the bucket its files were cut into.
type cutLog struct {
	*loadedLog
	bucketDir string // the bucket's directory (file://)
	report    mainReport
	reports   []roundRun
}

func (c *cutLog) close() {
	c.loadedLog.close()
	os.RemoveAll(c.bucketDir)
}

// bucketURL is the blob URL of the bucket in dir.
func bucketURL(dir string) string {
	return "file://" + filepath.ToSlash(dir) + "?create_dir=1&no_tmp_dir=1"
}

// mainLog loads -n attestations over -days days (and one on the day
// after, which closes the last: a day is cut once the log holds a leaf
// stamped later), signs the checkpoint of the whole log and cuts it.
func (b *bench) mainLog(ctx context.Context) (*cutLog, error) {
	first := dataset.DayOf(time.Now().UTC().AddDate(0, 0, -b.o.days-2))
	var segs []segment
	for k := range b.o.days {
		rows := b.o.n / int64(b.o.days)
		if int64(k) < b.o.n%int64(b.o.days) {
			rows++
		}
		segs = append(segs, segment{day: dataset.Day{Time: first.AddDate(0, 0, k)}, rows: rows})
	}
	segs = append(segs, segment{day: dataset.Day{Time: first.AddDate(0, 0, b.o.days)}, rows: 1})
	logf("backfill: loading %d attestations over %d days (and 1 on the next day)...", b.o.n, b.o.days)
	l, err := b.loadLog(ctx, "dataset_main", segs)
	if err != nil {
		return nil, err
	}
	c := &cutLog{loadedLog: l, bucketDir: filepath.Join(b.tmp, "bucket-main")}
	if err := b.signCheckpoint(ctx, l, l.total); err != nil {
		c.close()
		return nil, err
	}
	r, err := b.round(ctx, c, "the log's first round")
	if err != nil {
		c.close()
		return nil, err
	}
	if err := b.checkDays(c, &r, segs[:len(segs)-1]); err != nil {
		c.close()
		return nil, err
	}
	c.report = mainReport{rows: b.o.n, leaves: l.total, days: b.o.days, load: l.took, dbBytes: l.dbBytes, dropped: l.dropped, round: r}
	return c, nil
}

// bigLog loads a log of a day of bigday/4 rows, a day of bigday rows and
// one attestation on the day after, and cuts it in two runs (a
// checkpoint covering the first day only, then one of the whole log):
// each run's peak RSS is that of cutting one day.
func (b *bench) bigLog(ctx context.Context) (*cutLog, error) {
	first := dataset.DayOf(time.Now().UTC().AddDate(0, 0, -4))
	segs := []segment{{day: first, rows: b.o.bigday / 4}, {day: dataset.Day{Time: first.AddDate(0, 0, 1)}, rows: b.o.bigday},
		{day: dataset.Day{Time: first.AddDate(0, 0, 2)}, rows: 1}}
	logf("backfill: loading a log of a day of %d attestations and a day of %d...", segs[0].rows, segs[1].rows)
	l, err := b.loadLog(ctx, "dataset_big", segs)
	if err != nil {
		return nil, err
	}
	c := &cutLog{loadedLog: l, bucketDir: filepath.Join(b.tmp, "bucket-big")}
	for i := range 2 {
		if err := b.signCheckpoint(ctx, l, l.ends[i]); err != nil {
			c.close()
			return nil, err
		}
		r, err := b.round(ctx, c, fmt.Sprintf("a day of %d rows", segs[i].rows))
		if err != nil {
			c.close()
			return nil, err
		}
		if err := b.checkDays(c, &r, segs[i:i+1]); err != nil {
			c.close()
			return nil, err
		}
		c.reports = append(c.reports, r)
	}
	return c, nil
}

// round runs `attestd dataset --once` on the log into its bucket, and
// reads from the index which days it cut.
func (b *bench) round(ctx context.Context, c *cutLog, label string) (roundRun, error) {
	r := roundRun{label: label}
	before, err := readIndex(c.bucketDir)
	if err != nil && !os.IsNotExist(err) {
		return r, err
	}
	// Under GNU time: its child's ru_maxrss is attestd's own. (The
	// ru_maxrss of a child this process started would count this
	// process's RSS too: Go starts children with vfork, and Linux keeps
	// the high-water mark of the memory an exec replaces.)
	usage := filepath.Join(b.tmp, "round.time")
	cmd := exec.CommandContext(ctx, timeBin, "-f", "%M %U %S", "-o", usage, b.o.attestd, "dataset", "--once")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+c.url, "REDIS_URL="+b.stores.RedisURL, "ATTESTD_LOG_KEY="+b.key.VerifierKey,
		"ATTESTD_LOG_WITNESSES=", "ATTESTD_DATASET_BUCKET="+bucketURL(c.bucketDir), "ATTESTD_DATASET_PREFIX="+prefix,
		"ATTESTD_DATASET_METRICS_ADDR=", "ATTESTD_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf("backfill: %s: attestd dataset --once...", label)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("attestd dataset --once: %w", err)
	}
	r.wall = time.Since(start)
	raw, err := os.ReadFile(usage)
	if err != nil {
		return r, err
	}
	var kb int64
	var user, sys float64
	if _, err := fmt.Sscanf(string(raw), "%d %f %f", &kb, &user, &sys); err != nil {
		return r, fmt.Errorf("read %s's figures %q: %w", timeBin, raw, err)
	}
	r.maxRSS = kb * 1024
	r.cpu = time.Duration((user + sys) * float64(time.Second))
	after, err := readIndex(c.bucketDir)
	if err != nil {
		return r, fmt.Errorf("the round wrote no index: %w", err)
	}
	r.days = after.Days[len(before.Days):]
	for _, d := range r.days {
		r.rows += d.Rows
		r.bytes += d.Bytes
		r.largest = max(r.largest, d.Rows)
	}
	logf("backfill: %s: %d days, %d rows in %s (%.0f rows/s), peak RSS %.0f MiB", label, len(r.days), r.rows,
		r.wall.Round(time.Millisecond), r.rowsPerSecond(), float64(r.maxRSS)/(1<<20))
	return r, nil
}

func readIndex(dir string) (dataset.Index, error) {
	var idx dataset.Index
	raw, err := os.ReadFile(filepath.Join(dir, prefix, dataset.IndexName))
	if err != nil {
		return idx, err
	}
	return idx, json.Unmarshal(raw, &idx)
}

// checkDays checks that run r cut exactly the days of segs, with their
// rows, and that every file verifies (dataset.VerifyFile against its
// manifest, offline: readable Parquet, every row in its place, the rows
// rebuild the root of the manifest's checkpoint, signed with the bench's
// key). It sets r.verify.
func (b *bench) checkDays(c *cutLog, r *roundRun, segs []segment) error {
	if len(r.days) != len(segs) {
		return fmt.Errorf("%s: the round cut %d days, want %d", r.label, len(r.days), len(segs))
	}
	v, err := client.NewLogVerifier(b.key.VerifierKey)
	if err != nil {
		return err
	}
	start := time.Now()
	logf("backfill: %s: verifying the %d files...", r.label, len(r.days))
	var rows int64
	for i, d := range r.days {
		if d.Day != segs[i].day.String() || d.Rows != segs[i].rows {
			return fmt.Errorf("%s: day %d is %s of %d rows, want %s of %d", r.label, i, d.Day, d.Rows, segs[i].day, segs[i].rows)
		}
		raw, err := os.ReadFile(filepath.Join(c.bucketDir, prefix, d.Manifest))
		if err != nil {
			return err
		}
		var m dataset.Manifest
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		f, err := os.Open(filepath.Join(c.bucketDir, prefix, d.File))
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		rep, err := dataset.VerifyFile(context.Background(), f, st.Size(), dataset.VerifyOptions{Verifier: v, Manifest: m})
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %s does not verify: %w", r.label, d.File, err)
		}
		if rep.Rows != d.Rows || st.Size() != d.Bytes {
			return fmt.Errorf("%s: %s: %d rows and %d bytes read, the index says %d and %d", r.label, d.File, rep.Rows, st.Size(), d.Rows, d.Bytes)
		}
		rows += rep.Rows
	}
	var want int64
	for _, s := range segs {
		want += s.rows
	}
	if rows != want {
		return fmt.Errorf("%s: the files hold %d rows, want %d", r.label, rows, want)
	}
	r.verify = time.Since(start)
	logf("backfill: %s: %d files verified, %d rows, in %s", r.label, len(r.days), rows, r.verify.Round(time.Second))
	return nil
}

func (b *bench) printBackfill(w io.Writer, bf backfillReport) {
	fmt.Fprintf(w, "### Backfill\n\n")
	m := bf.main
	if m.rows > 0 {
		r := m.round
		fmt.Fprintf(w, "A log of %d finalized attestations spread evenly over %d days (and one on the day after, which closes the last day), "+
			"loaded with COPY in %s (attestations, their leaves as attestation.LogLeaf writes them, the stored hashes computed in Go; "+
			"database %.1f GB; the attestations indexes no step here reads were dropped for the load: %s), its checkpoint signed "+
			"(no witnesses: quorum 0). Then `attestd dataset --once` (a child process) into a file:// bucket (gocloud.dev fileblob) "+
			"on the same filesystem as the database; its peak RSS as GNU time measures it. Every file then read back with dataset.VerifyFile "+
			"(the checkpoint's signature, the digest, every row in its place, the root rebuilt from the rows; %s): %d rows in %d files, "+
			"each day's as generated.\n\n",
			m.rows, m.days, m.load.Round(time.Second), float64(m.dbBytes)/1e9, strings.Join(m.dropped, ", "), r.verify.Round(time.Second), r.rows, len(r.days))
		fmt.Fprintf(w, "| days cut | rows | bytes | bytes per row | round (wall) | rows/s | CPU (user+sys) | peak RSS |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		fmt.Fprintf(w, "| %d | %d | %.1f MB | %.1f | %s | %.0f | %s | %.0f MiB |\n\n", len(r.days), r.rows, float64(r.bytes)/1e6,
			float64(r.bytes)/float64(r.rows), r.wall.Round(100*time.Millisecond), r.rowsPerSecond(), r.cpu.Round(100*time.Millisecond),
			float64(r.maxRSS)/(1<<20))
	}
	if len(bf.big) > 0 {
		fmt.Fprintf(w, "Peak RSS against the size of the day: a second log of a day of %d rows, then a day of %d; each day cut by its own "+
			"`attestd dataset --once` (a checkpoint covering the first day only, then one of the whole log), so each peak is that of one "+
			"day's file. A file is written %d rows (one row group) at a time.\n\n", bf.big[0].rows, bf.big[1].rows, dataset.RowGroupRows)
		fmt.Fprintf(w, "| run | rows of the day | row groups | bytes | round (wall) | rows/s | peak RSS |\n|---|---:|---:|---:|---:|---:|---:|\n")
		if m.rows > 0 {
			r := m.round
			fmt.Fprintf(w, "| the first log (%d days) | %d at most | %d at most | %.1f MB | %s | %.0f | %.0f MiB |\n", len(r.days), r.largest,
				groups(r.largest), float64(r.bytes)/1e6, r.wall.Round(100*time.Millisecond), r.rowsPerSecond(), float64(r.maxRSS)/(1<<20))
		}
		for _, r := range bf.big {
			fmt.Fprintf(w, "| %s | %d | %d | %.1f MB | %s | %.0f | %.0f MiB |\n", r.label, r.rows, groups(r.rows), float64(r.bytes)/1e6,
				r.wall.Round(100*time.Millisecond), r.rowsPerSecond(), float64(r.maxRSS)/(1<<20))
		}
		fmt.Fprintln(w)
	}
}

func groups(rows int64) int64 { return (rows + dataset.RowGroupRows - 1) / dataset.RowGroupRows }
