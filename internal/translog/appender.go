package translog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/batchsize"
	"github.com/attestd/attestd/internal/metric"
	"github.com/attestd/attestd/internal/pause"
	"github.com/attestd/attestd/internal/pglock"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/translog/logformat"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// LockKey is the PostgreSQL advisory lock that elects the one appender
// ("atst" "tlog").
const LockKey int64 = 0x61747374_746c6f67

// AppenderDeps configure an Appender.
type AppenderDeps struct {
	Store    *store.Store
	Config   // the tunables, from settings; Key must hold the private key
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: none
	// LockRetry is how often a standby tries the lock (default 1 s).
	LockRetry time.Duration
}

// Appender appends finalized attestations to the log and signs
// checkpoints, while it holds the appender lock.
type Appender struct {
	opt    AppenderDeps
	log    *slog.Logger
	leader atomic.Bool
	m      appenderMetrics
	wm     cosignerMetrics
}

type appenderMetrics struct {
	leader      prometheus.Gauge
	size        prometheus.Gauge
	queued      prometheus.Gauge
	lag         prometheus.Gauge
	appended    prometheus.Counter
	checkpoints prometheus.Counter
	behind      prometheus.Gauge
	unwitnessed prometheus.Gauge
}

// NewAppender checks the options and builds an appender.
func NewAppender(opt AppenderDeps) (*Appender, error) {
	if opt.Store == nil {
		return nil, errors.New("log appender: no store")
	}
	for _, k := range opt.Config.Keys() {
		if !k.CanSign() {
			return nil, errors.New("log appender: ATTESTD_LOG_KEY must be the log's private key (PRIVATE+KEY+…) where attestd index runs")
		}
	}
	if opt.Config.Batch <= 0 {
		opt.Config.Batch = 5000
	}
	if opt.Config.Poll <= 0 {
		opt.Config.Poll = 200 * time.Millisecond
	}
	if opt.Config.CheckpointInterval <= 0 {
		opt.Config.CheckpointInterval = 2 * time.Second
	}
	if opt.LockRetry <= 0 {
		opt.LockRetry = time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	a := &Appender{opt: opt, log: opt.Logger}
	a.m = appenderMetrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_appender_leader",
			Help: "1 while this process holds the transparency log's appender lock"}),
		size: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_size",
			Help: "leaves in the transparency log"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_queued",
			Help: "finalized attestations waiting for their leaf"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_lag_seconds",
			Help: "how long the oldest finalized attestation without a leaf has waited"}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_log_appended_total",
			Help: "leaves this process appended"}),
		checkpoints: prometheus.NewCounter(prometheus.CounterOpts{Name: "attestd_log_checkpoints_total",
			Help: "checkpoints this process signed"}),
		unwitnessed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_unwitnessed_seconds",
			Help: "how long the oldest checkpoint signed since the newest one its witnesses' quorum cosigned has waited for them (0: none waits)"}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{Name: "attestd_log_regrow_remaining",
			Help: "leaves the log still has to regrow from the chain to reach the size its witnesses cosigned (after a restore; 0: whole)"}),
	}
	a.wm = newCosignerMetrics()
	if opt.Registry != nil {
		a.wm.cosigned, a.wm.refused = metric.Register(opt.Registry, a.wm.cosigned), metric.Register(opt.Registry, a.wm.refused)
		a.wm.failed, a.wm.size = metric.Register(opt.Registry, a.wm.failed), metric.Register(opt.Registry, a.wm.size)
		a.wm.latency = metric.Register(opt.Registry, a.wm.latency)
		a.m.leader = metric.Register(opt.Registry, a.m.leader)
		a.m.size = metric.Register(opt.Registry, a.m.size)
		a.m.queued = metric.Register(opt.Registry, a.m.queued)
		a.m.lag = metric.Register(opt.Registry, a.m.lag)
		a.m.appended = metric.Register(opt.Registry, a.m.appended)
		a.m.checkpoints = metric.Register(opt.Registry, a.m.checkpoints)
		a.m.behind = metric.Register(opt.Registry, a.m.behind)
		a.m.unwitnessed = metric.Register(opt.Registry, a.m.unwitnessed)
	}
	return a, nil
}

// IsLeader reports whether this appender holds the lock now.
func (a *Appender) IsLeader() bool { return a.leader.Load() }

// Run campaigns for the appender lock and, while holding it, appends and
// signs, until ctx ends (it returns nil then).
func (a *Appender) Run(ctx context.Context) error {
	lock := pglock.Lock{Name: "the appender lock", Key: LockKey,
		Conn: a.opt.Store.Pool().Config().ConnConfig, Retry: a.opt.LockRetry}
	return lock.Run(ctx, pglock.Campaign{
		Term: func(ctx context.Context, conn *pgx.Conn) error {
			a.leader.Store(true)
			a.m.leader.Set(1)
			a.log.Info("log appender elected", "origin", a.opt.Config.Key.Name)
			err := a.lead(ctx, conn)
			a.leader.Store(false)
			a.m.leader.Set(0)
			return err
		},
		Waiting: func(err error) {
			if err != nil {
				a.log.Warn("log appender cannot try its lock", "err", err)
			}
		},
		Lost: func(err error) {
			a.log.Warn("log appender lost its lock; campaigning again", "err", err)
		},
	})
}

// lead appends and signs until ctx ends or the lock's connection fails.
// Correctness does not rest on the lock (appends serialise on the
// log_size row); it only keeps one process doing the work.
func (a *Appender) lead(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		if err := pglock.Watch(ctx, conn); errors.Is(err, pglock.ErrLost) {
			cancel(fmt.Errorf("appender %w", err)) // "appender lock connection lost: …"
		}
	}()
	t := leadTerm{signedSize: -1}
	var stop func()
	t.cos, stop = a.startCosigner(ctx, cancel)
	defer stop()
	if err := a.startTerm(ctx, &t); err != nil {
		return err
	}
	// Appends that outlive their deadline are retried smaller: the same
	// append would time out again at every try on a loaded server.
	size := batchsize.New(a.opt.Config.Batch)
	for {
		most := t.appendMax(size.Now())
		res, err := a.opt.Store.LogAppend(ctx, most)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if batchsize.IsTimeout(err) {
				if n, changed := size.TimedOut(most); changed {
					a.log.Warn("log append timed out: PostgreSQL is slower than its deadline; trying smaller appends", "leaves", most, "batch", n)
				}
			}
			a.log.Warn("log append failed; will try again", "err", err)
			if !pause.For(ctx, a.opt.Config.Poll) {
				return context.Cause(ctx)
			}
			continue
		}
		if n, changed := size.Applied(); changed {
			a.log.Info("log appends grow again", "batch", n)
		}
		if res.Leaves > 0 {
			a.m.appended.Add(float64(res.Leaves))
		}
		a.m.size.Set(float64(res.Size))
		t.size = res.Size
		a.m.behind.Set(float64(max(0, t.floor-t.size)))
		if t.regrowing() && time.Since(t.lastProgress) >= regrowProgressEvery {
			t.lastProgress = time.Now()
			a.log.Info("log regrowing to its witnessed size", "size", t.size, "witnessed_size", t.floor,
				"percent", fmt.Sprintf("%.1f", 100*float64(t.size)/float64(t.floor)))
		}
		if a.signDue(res, &t) {
			a.sign(ctx, &t)
		}
		if time.Since(t.lastBacklog) >= backlogEvery {
			// The count scans the queue: a backfill's millions are read
			// once every few seconds, not at each append.
			t.lastBacklog = time.Now()
			a.refreshBacklog(ctx)
		}
		full := res.Leaves+res.Dropped >= most
		if full {
			continue // more waits: no pause
		}
		if !pause.For(ctx, a.nextWait(res, t)) {
			return context.Cause(ctx)
		}
	}
}

// leadTerm is what one leadership term of the appender keeps between
// appends.
type leadTerm struct {
	lastSigned, lastBacklog time.Time
	lastProgress            time.Time
	signedSize              int64 // -1: none signed yet this term
	size                    int64 // the log's size after the last append
	floor                   int64 // the witnessed size, while the log regrows to it (regrow.go)
	cos                     *cosigner
}

// startTerm reads the log's size and, when witnesses are configured,
// learns what they cosigned (regrow.go) before anything is appended.
func (a *Appender) startTerm(ctx context.Context, t *leadTerm) error {
	b, err := a.opt.Store.LogBacklog(ctx)
	for err != nil {
		a.log.Warn("log appender: cannot read the log's size; will try again", "err", err)
		if !pause.For(ctx, a.opt.Config.Poll) {
			return context.Cause(ctx)
		}
		b, err = a.opt.Store.LogBacklog(ctx)
	}
	t.size = b.Size
	if t.cos == nil {
		return a.releaseUnwitnessed(ctx)
	}
	return a.askWitnesses(ctx, t)
}

// signDue reports whether a checkpoint is to be signed after this append:
// never while the log regrows below its witnessed size; at once when it
// reaches it; otherwise when it grew and the interval passed.
func (a *Appender) signDue(res store.LogAppended, t *leadTerm) bool {
	switch {
	case res.Size == t.signedSize || t.regrowing():
		return false
	case t.regrown(res):
		a.log.Info("log regrown to the size its witnesses cosigned; signing it for them to check", "size", res.Size)
		return true
	}
	return time.Since(t.lastSigned) >= a.opt.Config.CheckpointInterval
}

// regrown reports whether this append brought the log to exactly its
// witnessed size, not signed yet.
func (t *leadTerm) regrown(res store.LogAppended) bool {
	return t.floor > 0 && res.Size == t.floor && t.signedSize < t.floor
}

// startCosigner starts the cosigner when witnesses are configured (nil
// otherwise): the witnesses hear of each checkpoint from it, and work on
// their own, so appending never waits for them. stop cancels ctx and
// waits for it.
func (a *Appender) startCosigner(ctx context.Context, cancel context.CancelCauseFunc) (cos *cosigner, stop func()) {
	if len(a.opt.Config.Witnesses) == 0 {
		return nil, func() {}
	}
	cos = newCosigner(a.opt.Store, a.opt.Config, a.log, a.wm)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cos.run(ctx)
	}()
	if c, ok, err := a.opt.Store.LatestLogCheckpoint(ctx, a.opt.Config.Origin()); err == nil && ok {
		cos.signed(c) // a new leader picks up where the last one stood
	}
	return cos, func() { cancel(nil); <-done }
}

// sign signs a checkpoint, recording it in t and telling the witnesses;
// a failure is logged and tried again at the next append.
func (a *Appender) sign(ctx context.Context, t *leadTerm) {
	c, made, err := a.SignCheckpoint(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		a.log.Warn("log checkpoint failed; will try again", "err", err)
	case err == nil:
		t.signedSize, t.lastSigned = c.Size, time.Now()
		if made {
			a.m.checkpoints.Inc()
		}
		if t.cos != nil {
			t.cos.signed(c)
		}
	}
}

// refreshBacklog sets the queue metrics from the store.
func (a *Appender) refreshBacklog(ctx context.Context) {
	if b, err := a.opt.Store.LogBacklog(ctx); err == nil {
		a.m.queued.Set(float64(b.Queued))
		a.m.lag.Set(b.Oldest.Seconds())
	}
	if len(a.opt.Config.Witnesses) > 0 {
		if d, err := a.opt.Store.OldestUnwitnessed(ctx, a.opt.Config.Origin(), a.opt.Config.Quorum); err == nil {
			a.m.unwitnessed.Set(d.Seconds())
		}
	}
}

// nextWait is how long to pause after an append that did not fill its
// batch.
func (a *Appender) nextWait(res store.LogAppended, t leadTerm) time.Duration {
	wait := a.opt.Config.Poll
	if res.Size != t.signedSize {
		// Grown but signed too recently: come back when the next
		// checkpoint is due, or at the next poll if sooner.
		if due := a.opt.Config.CheckpointInterval - time.Since(t.lastSigned); due < wait {
			wait = max(due, time.Millisecond)
		}
	}
	return wait
}

// SignCheckpoint signs a checkpoint of the log's current size when the
// newest one of this origin is smaller, and returns the newest.
func (a *Appender) SignCheckpoint(ctx context.Context) (store.LogCheckpoint, bool, error) {
	keys := a.opt.Config.Keys()
	signers := make([]note.Signer, len(keys))
	for i, k := range keys {
		signers[i] = k.Signer
	}
	origin := a.opt.Config.Origin()
	return a.opt.Store.LogSignCheckpoint(ctx, origin, func(size int64, root tlog.Hash) (string, error) {
		return logformat.Checkpoint{Origin: origin, Size: size, Root: root}.Sign(signers...)
	})
}

// regrowProgressEvery is how often a regrowing log says how far it is.
const regrowProgressEvery = 5 * time.Second

// backlogEvery is how often the appender refreshes its queue metrics.
const backlogEvery = 5 * time.Second
