package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/pglock"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/translog"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// LockKey is the PostgreSQL advisory lock that elects the one producer
// ("atst" "data"): its own, so a backfill never holds the appender's.
const LockKey int64 = 0x61747374_64617461

// ProducerDeps configure a Producer.
type ProducerDeps struct {
	Store  *store.Store
	Bucket *blob.Bucket // under the configured prefix (Config.OpenBucket)
	Config Config
	// Log is the log's configuration: its origin, witnesses and quorum
	// (a verifier key is enough: the producer signs nothing).
	Log        translog.Config
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: none
	// LockRetry is how often a standby tries the lock (default 1 s).
	LockRetry time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Producer cuts the daily files while it holds the producer lock: on its
// first term every past day (the backfill), then each day once it is
// closed in the log and a witnessed checkpoint covers its last leaf.
type Producer struct {
	d      ProducerDeps
	log    *slog.Logger
	leader atomic.Bool
	m      producerMetrics
}

type producerMetrics struct {
	files, rows, failures prometheus.Counter
	leader, lag, newest   prometheus.Gauge
}

// NewProducer checks deps and registers the producer's metrics.
func NewProducer(d ProducerDeps) (*Producer, error) {
	if d.Store == nil || d.Bucket == nil {
		return nil, errors.New("dataset producer: a store and a bucket are required")
	}
	if !d.Log.Enabled() {
		return nil, errors.New("dataset producer: the transparency log is off (set ATTESTD_LOG_KEY to its verifier key): files are cut against its checkpoints")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.LockRetry <= 0 {
		d.LockRetry = time.Second
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	p := &Producer{d: d, log: d.Logger, m: producerMetrics{
		files:    prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_dataset_files_written_total", Help: "daily dataset files this process wrote (each day once fleet-wide, but after a crash mid-file)"}),
		rows:     prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_dataset_rows_written_total", Help: "rows of the daily dataset files this process wrote"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_dataset_round_failures_total", Help: "producer rounds that failed (retried at the next interval)"}),
		leader:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_dataset_producer_leader", Help: "1 while this process holds the dataset producer lock"}),
		lag:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_dataset_lag_seconds", Help: "seconds since the end of the oldest day that has ended without a file (0: every ended day with attestations has its file)"}),
		newest:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_dataset_newest_day_timestamp_seconds", Help: "the start of the newest day with a file, in unix seconds"}),
	}}
	if d.Registerer != nil {
		m := &p.m
		for _, c := range []prometheus.Collector{m.files, m.rows, m.failures, m.leader, m.lag, m.newest} {
			metric.Register(d.Registerer, c)
		}
	}
	return p, nil
}

func (p *Producer) lock() pglock.Lock {
	return pglock.Lock{Name: "the dataset producer lock", Key: LockKey, Conn: p.d.Store.Pool().Config().ConnConfig, Retry: p.d.LockRetry}
}

// IsLeader reports whether this producer holds the lock now.
func (p *Producer) IsLeader() bool { return p.leader.Load() }

// Run campaigns for the producer lock and, while holding it, runs a round
// every Config.Interval until ctx ends (it returns nil then).
func (p *Producer) Run(ctx context.Context) error {
	return p.lock().Run(ctx, pglock.Campaign{
		Term: func(ctx context.Context, conn *pgx.Conn) error {
			p.leader.Store(true)
			p.m.leader.Set(1)
			defer func() { p.leader.Store(false); p.m.leader.Set(0) }()
			p.log.Info("dataset producer elected", "interval", p.d.Config.Interval.String())
			return p.lead(ctx, conn)
		},
		Waiting: func(err error) {
			if err != nil {
				p.log.Warn("dataset producer cannot try its lock", "err", err)
			}
		},
		Lost: func(err error) { p.log.Warn("dataset producer lost its lock; campaigning again", "err", err) },
	})
}

// Once waits for the producer lock, runs one round under it (the
// backfill, and every day that can be cut) and releases it.
func (p *Producer) Once(ctx context.Context) error {
	conn, err := p.lock().Acquire(ctx, nil)
	if err != nil {
		return fmt.Errorf("dataset producer: %w", err)
	}
	defer pglock.Close(conn)
	p.leader.Store(true)
	defer p.leader.Store(false)
	_, err = p.Round(ctx)
	return err
}

func (p *Producer) lead(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		if err := pglock.Watch(ctx, conn); errors.Is(err, pglock.ErrLost) {
			cancel(fmt.Errorf("dataset producer %w", err))
		}
	}()
	for {
		if _, err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.m.failures.Inc()
			p.log.Warn("dataset round failed; trying again at the next interval", "err", err)
		}
		if !pause.For(ctx, p.d.Config.Interval) {
			return context.Cause(ctx)
		}
	}
}

// Round cuts every day it can, in order, and rewrites the index when
// anything changed. It returns how many files it wrote. It does not take
// the lock: Run does (tests and attestd dataset --once call it under it).
func (p *Producer) Round(ctx context.Context) (int, error) {
	idx, err := p.readIndex(ctx)
	if err != nil {
		return 0, err
	}
	before, _ := json.Marshal(idx)
	var bf backfill
	bf.start(p.d.Now())
	cut := 0
	for {
		next, err := p.nextDay(ctx, idx.NextIndex)
		if err != nil {
			return cut, err
		}
		if next.pending != nil {
			idx.Pending = []Pending{*next.pending}
			p.setLag(next.pending)
			break
		}
		m, wrote, err := p.cut(ctx, next)
		if err != nil {
			return cut, err
		}
		idx.Days = append(idx.Days, dayOf(m, next.day))
		idx.NextIndex = next.end
		idx.Pending = nil
		idx.UpdatedAt = attestation.At(p.d.Now())
		if err := p.writeJSON(ctx, IndexName, idx, "public, max-age=60"); err != nil {
			return cut, err
		}
		p.m.newest.Set(float64(next.day.Unix()))
		if wrote {
			cut++
			bf.day(p.log, next, m)
		} else {
			p.log.Info("dataset day found written (its manifest was in the bucket): listed", "day", m.Day)
		}
	}
	if after, _ := json.Marshal(idx); string(after) != string(before) {
		idx.UpdatedAt = attestation.At(p.d.Now())
		if err := p.writeJSON(ctx, IndexName, idx, "public, max-age=60"); err != nil {
			return cut, err
		}
	}
	bf.done(p.log, cut)
	return cut, nil
}

// setLag exports how long the pending day has been over.
func (p *Producer) setLag(pd *Pending) {
	d, err := ParseDay(pd.Day)
	if err != nil {
		p.m.lag.Set(0)
		return
	}
	p.m.lag.Set(max(0, p.d.Now().Sub(d.Next()).Seconds()))
}

// readIndex reads the index, or starts one.
func (p *Producer) readIndex(ctx context.Context) (Index, error) {
	origin := p.d.Log.Origin()
	b, err := p.d.Bucket.ReadAll(ctx, IndexName)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Index{Format: Format, Origin: origin, Days: []IndexDay{}, Pending: []Pending{}}, nil
	}
	if err != nil {
		return Index{}, fmt.Errorf("read the dataset's index: %w", err)
	}
	var idx Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return Index{}, fmt.Errorf("read the dataset's index: %w", err)
	}
	if idx.Format != Format || idx.Origin != origin {
		return Index{}, fmt.Errorf("the bucket's dataset index is of %s for log %q, not %s for %q: point ATTESTD_DATASET_PREFIX elsewhere",
			idx.Format, idx.Origin, Format, origin)
	}
	return idx, nil
}

// writeJSON writes v as an object.
func (p *Producer) writeJSON(ctx context.Context, key string, v any, cacheControl string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	b = append(b, '\n')
	if err := p.d.Bucket.WriteAll(ctx, key, b, &blob.WriterOptions{ContentType: "application/json", CacheControl: cacheControl}); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// backfill reports a round's progress: one line per day cut, with the
// rows per second so far and the leaves still to go.
type backfill struct {
	at   time.Time
	rows int64
	days int
}

func (b *backfill) start(now time.Time) { *b = backfill{at: now} }

func (b *backfill) day(log *slog.Logger, d dayRange, m Manifest) {
	b.days++
	b.rows += m.Rows
	elapsed := time.Since(b.at).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.rows) / elapsed
	}
	log.Info("dataset day cut", "day", m.Day, "rows", m.Rows, "bytes", m.Bytes, "days_done", b.days,
		"rows_per_second", int64(rate), "remaining_leaves", max(0, d.cp.Size-d.end), "checkpoint", m.Proof.TreeSize)
}

func (b *backfill) done(log *slog.Logger, cut int) {
	if cut > 1 {
		log.Info("dataset caught up", "days", b.days, "rows", b.rows, "seconds", int64(time.Since(b.at).Seconds()))
	}
}
