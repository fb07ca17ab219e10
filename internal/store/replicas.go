package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/config"
	"github.com/attestd/attestd/internal/metric"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Vars lists the variables ReplicasFromEnv reads.
var Vars = []config.Var{
	{Name: "DATABASE_READ_URLS", Default: "(none)", Help: "comma-separated PostgreSQL URLs of streaming read replicas; reads that can use them do"},
	{Name: "ATTESTD_REPLICA_MAX_LAG", Default: "2s", Help: "a replica further behind the primary than this is skipped"},
	{Name: "ATTESTD_REPLICA_WAIT", Default: "200ms", Help: "longest a read waits for a replica to replay the commit it must see, before it reads the primary"},
	{Name: "ATTESTD_REPLICA_POLL_INTERVAL", Default: "100ms", Help: "how often each node reads the replicas' replay positions"},
}

// ReplicaOptions say which read replicas a Store uses and how.
type ReplicaOptions struct {
	URLs         []string
	MaxLag       time.Duration // default 2 s
	Wait         time.Duration // default 200 ms
	PollInterval time.Duration // default 100 ms
	Registerer   prometheus.Registerer
	Logger       *slog.Logger
}

// ReplicasFromEnv reads DATABASE_READ_URLS and the replica settings.
func ReplicasFromEnv(getenv func(string) string) (ReplicaOptions, error) {
	e := config.NewEnv(getenv)
	var o ReplicaOptions
	for _, u := range strings.Split(e.String("DATABASE_READ_URLS", ""), ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if _, err := pgxpool.ParseConfig(u); err != nil {
			e.Fail("DATABASE_READ_URLS", "replica %d is not a PostgreSQL URL", len(o.URLs)+1)
			continue
		}
		o.URLs = append(o.URLs, u)
	}
	o.MaxLag = e.Duration("ATTESTD_REPLICA_MAX_LAG", 2*time.Second, 10*time.Millisecond, time.Hour)
	o.Wait = e.Duration("ATTESTD_REPLICA_WAIT", 200*time.Millisecond, 0, 10*time.Second)
	o.PollInterval = e.Duration("ATTESTD_REPLICA_POLL_INTERVAL", 100*time.Millisecond, 5*time.Millisecond, 10*time.Second)
	return o, e.Err()
}

type positionKey struct{}

// AtLeast returns a context whose reads must reflect every commit at or
// before WAL position pos (a cache epoch is one: the write path bumps it
// to at least the position after its commit). Such reads may go to a read
// replica that has replayed past pos; reads without a position go to the
// primary.
func AtLeast(ctx context.Context, pos uint64) context.Context {
	return context.WithValue(ctx, positionKey{}, pos)
}

func positionOf(ctx context.Context) (uint64, bool) {
	p, ok := ctx.Value(positionKey{}).(uint64)
	return p, ok
}

// ReplicaStatus is one replica as /health and /metrics report it.
type ReplicaStatus struct {
	Name string // host:port/database, no credentials
	// Status: "ok" (reads use it), "lagging" (more than the bound behind),
	// "down" (does not answer) or "not_replica" (not in recovery).
	Status     string
	LagSeconds float64 // replay lag behind the primary; -1 while unknown
	ReplayLSN  uint64
}

// replica is one read replica and what the poller last learned of it.
type replica struct {
	name   string
	pool   *pgxpool.Pool
	replay atomic.Uint64 // pg_last_wal_replay_lsn()
	state  atomic.Int32  // replicaDown, replicaUp, replicaNotReplica
	lag    atomic.Int64  // nanoseconds; -1 unknown
	failed atomic.Int64  // when a read last failed on it (unix ns)
	reads  prometheus.Counter
}

const (
	replicaDown int32 = iota
	replicaUp
	replicaNotReplica
)

// usable reports whether reads may use r at all: it answers, replays WAL,
// and is within maxLag of the primary.
func (r *replica) usable(maxLag time.Duration) bool {
	lag := r.lag.Load()
	return r.state.Load() == replicaUp && lag >= 0 && time.Duration(lag) <= maxLag
}

// lsnSample is the primary's flushed WAL position when first seen.
type lsnSample struct {
	at  time.Time
	lsn uint64
}

// replicaSet routes reads between the primary and its replicas. Each
// replica's replay position and lag are tracked in the background, so a
// read decides locally, without a round trip.
type replicaSet struct {
	primary *pgxpool.Pool
	list    []*replica
	opt     ReplicaOptions
	log     *slog.Logger

	mu      sync.Mutex
	samples []lsnSample   // increasing lsn; the oldest is trimmed
	changed chan struct{} // closed (and replaced) when positions change

	waiters  atomic.Int32    // reads waiting for a position: poll fast
	kicks    []chan struct{} // one per poller: wake it now
	next     atomic.Uint32   // round robin among eligible replicas
	timedOut atomic.Uint64   // highest position a wait gave up on

	toPrimary *prometheus.CounterVec
	waits     prometheus.Histogram

	stop context.CancelFunc
	wg   sync.WaitGroup
}

func openReplicas(ctx context.Context, primary *pgxpool.Pool, opt ReplicaOptions, maxConns int32) (*replicaSet, error) {
	if opt.MaxLag <= 0 {
		opt.MaxLag = 2 * time.Second
	}
	if opt.Wait < 0 {
		opt.Wait = 0
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = 100 * time.Millisecond
	}
	rs := &replicaSet{primary: primary, opt: opt, log: opt.Logger, changed: make(chan struct{})}
	if rs.log == nil {
		rs.log = slog.Default()
	}
	rs.toPrimary = metric.Register(opt.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_replica_primary_reads_total",
		Help: "Reads that could have used a replica but went to the primary, by reason (none_usable, wait_timeout, replica_failed)."}, []string{"reason"}))
	rs.waits = metric.Register(opt.Registerer, prometheus.NewHistogram(prometheus.HistogramOpts{Name: "attestd_replica_wait_seconds",
		Help: "Time reads waited for a replica to replay the commit they must see.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}))
	reads := metric.Register(opt.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_replica_reads_total",
		Help: "Reads served by each replica."}, []string{"replica"}))
	lag := metric.Register(opt.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "attestd_replica_lag_seconds",
		Help: "Each replica's replay lag behind the primary (-1 while unknown)."}, []string{"replica"}))
	up := metric.Register(opt.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "attestd_replica_usable",
		Help: "1 while reads may use the replica (it answers, replays WAL, and is within the lag bound)."}, []string{"replica"}))
	for i, u := range opt.URLs {
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			rs.closePools()
			return nil, fmt.Errorf("parse replica %d of DATABASE_READ_URLS: %w", i+1, err)
		}
		cfg.MaxConns = maxConns
		cfg.ConnConfig.ConnectTimeout = 2 * time.Second
		tune(cfg.ConnConfig)
		name := replicaName(cfg, i)
		pool, err := pgxpool.NewWithConfig(ctx, cfg) // connects lazily: a replica may be down at start
		if err != nil {
			rs.closePools()
			return nil, fmt.Errorf("open replica %s: %w", name, err)
		}
		r := &replica{name: name, pool: pool, reads: reads.WithLabelValues(name)}
		r.lag.Store(-1)
		rs.list = append(rs.list, r)
		metric.Register(opt.Registerer, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "attestd_replica_replay_lsn",
			Help: "The replica's replayed WAL position, as a number.", ConstLabels: prometheus.Labels{"replica": name}},
			func() float64 { return float64(r.replay.Load()) }))
	}
	bg, cancel := context.WithCancel(context.Background())
	rs.stop = cancel
	for range 1 + len(rs.list) {
		rs.kicks = append(rs.kicks, make(chan struct{}, 1))
	}
	rs.wg.Add(1 + len(rs.list))
	go rs.pollPrimary(bg, rs.kicks[0])
	for i, r := range rs.list {
		go rs.pollReplica(bg, rs.kicks[i+1], r, lag.WithLabelValues(r.name), up.WithLabelValues(r.name))
	}
	return rs, nil
}

// replicaName names a replica without its credentials.
func replicaName(cfg *pgxpool.Config, i int) string {
	host := cfg.ConnConfig.Host
	if strings.HasPrefix(host, "/") {
		host = "socket"
	}
	return fmt.Sprintf("%s:%d/%s", host, cfg.ConnConfig.Port, url.PathEscape(cfg.ConnConfig.Database))
}

func (rs *replicaSet) closePools() {
	for _, r := range rs.list {
		r.pool.Close()
	}
}

func (rs *replicaSet) close() {
	rs.stop()
	rs.wg.Wait()
	rs.closePools()
}

// interval is how long a poller sleeps: short while reads wait for a
// position, so they learn of it soon.
func (rs *replicaSet) interval() time.Duration {
	if rs.waiters.Load() > 0 {
		return min(rs.opt.PollInterval, 5*time.Millisecond)
	}
	return rs.opt.PollInterval
}

func (rs *replicaSet) sleep(ctx context.Context, kick <-chan struct{}) bool {
	t := time.NewTimer(rs.interval())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-kick:
	}
	return true
}

// broadcast wakes every read waiting for positions to change.
func (rs *replicaSet) broadcast() {
	rs.mu.Lock()
	close(rs.changed)
	rs.changed = make(chan struct{})
	rs.mu.Unlock()
}

// pollPrimary samples the primary's flushed WAL position: a replica's lag
// is how long ago the primary first had WAL the replica has not replayed.
func (rs *replicaSet) pollPrimary(ctx context.Context, kick <-chan struct{}) {
	defer rs.wg.Done()
	for {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		var lsn int64
		err := rs.primary.QueryRow(qctx, `SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&lsn)
		cancel()
		if err == nil && lsn >= 0 {
			now := time.Now()
			rs.mu.Lock()
			if n := len(rs.samples); n == 0 || uint64(lsn) > rs.samples[n-1].lsn {
				rs.samples = append(rs.samples, lsnSample{at: now, lsn: uint64(lsn)})
			}
			// Keep what lag up to a minute past the bound needs.
			keep := now.Add(-rs.opt.MaxLag - time.Minute)
			i := 0
			for i < len(rs.samples)-1 && rs.samples[i+1].at.Before(keep) {
				i++
			}
			rs.samples = rs.samples[i:]
			rs.mu.Unlock()
		}
		if !rs.sleep(ctx, kick) {
			return
		}
	}
}

// lagOf is how far behind a replica at replay position pos is: zero when
// it has replayed everything the primary was last seen to have flushed.
func (rs *replicaSet) lagOf(pos uint64, now time.Time) time.Duration {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, s := range rs.samples {
		if s.lsn > pos {
			return now.Sub(s.at)
		}
	}
	return 0
}

func (rs *replicaSet) pollReplica(ctx context.Context, kick <-chan struct{}, r *replica, lagGauge, upGauge prometheus.Gauge) {
	defer rs.wg.Done()
	for {
		started := time.Now().UnixNano()
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		var inRecovery bool
		var replay *int64
		err := r.pool.QueryRow(qctx, `SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint`).Scan(&inRecovery, &replay)
		cancel()
		before := r.usable(rs.opt.MaxLag)
		switch {
		case ctx.Err() != nil:
			return
		case r.failed.Load() >= started:
			// A read failed on it while this poll was in flight: the poll's
			// answer may predate the failure, so it cannot clear it.
		case err != nil:
			if r.state.Swap(replicaDown) != replicaDown {
				rs.log.Warn("read replica unreachable: reads go elsewhere", "replica", r.name, "err", err)
			}
			r.lag.Store(-1)
		case !inRecovery || replay == nil:
			if r.state.Swap(replicaNotReplica) != replicaNotReplica {
				rs.log.Error("DATABASE_READ_URLS names a server that is not a streaming replica: not reading from it", "replica", r.name)
			}
			r.lag.Store(-1)
		default:
			if r.state.Swap(replicaUp) != replicaUp {
				rs.log.Info("read replica answers", "replica", r.name)
			}
			pos := uint64(*replay)
			r.lag.Store(int64(rs.lagOf(pos, time.Now())))
			if r.replay.Swap(pos) != pos {
				rs.broadcast()
			}
		}
		if now := r.usable(rs.opt.MaxLag); now != before {
			rs.broadcast()
		}
		lagGauge.Set(time.Duration(r.lag.Load()).Seconds())
		if r.lag.Load() < 0 {
			lagGauge.Set(-1)
		}
		if r.usable(rs.opt.MaxLag) {
			upGauge.Set(1)
		} else {
			upGauge.Set(0)
		}
		if !rs.sleep(ctx, kick) {
			return
		}
	}
}

// wake asks every poller to look again now.
func (rs *replicaSet) wake() {
	for _, k := range rs.kicks {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// pick chooses where a read with ctx goes: a usable replica that has
// replayed the read's position, waiting up to the bound for one to get
// there; nil means the primary. A read without a position uses the
// primary. A position a wait already gave up on (an epoch that ran past
// the WAL, as one bumped without a floor can) goes to the primary at once
// until a replica reaches it.
func (rs *replicaSet) pick(ctx context.Context) *replica {
	pos, ok := positionOf(ctx)
	if !ok || len(rs.list) == 0 {
		return nil
	}
	var deadline time.Time
	waiting := false
	defer func() {
		if waiting {
			rs.waiters.Add(-1)
		}
	}()
	for {
		rs.mu.Lock()
		changed := rs.changed
		rs.mu.Unlock()
		var eligible []*replica
		anyUsable := false
		for _, r := range rs.list {
			if !r.usable(rs.opt.MaxLag) {
				continue
			}
			anyUsable = true
			if r.replay.Load() >= pos {
				eligible = append(eligible, r)
			}
		}
		if len(eligible) > 0 {
			if waiting {
				rs.waits.Observe(time.Since(deadline.Add(-rs.opt.Wait)).Seconds())
			}
			r := eligible[int(rs.next.Add(1))%len(eligible)]
			r.reads.Inc()
			return r
		}
		if !anyUsable {
			rs.toPrimary.WithLabelValues("none_usable").Inc()
			return nil
		}
		if deadline.IsZero() {
			if pos <= rs.timedOut.Load() || rs.opt.Wait == 0 {
				rs.toPrimary.WithLabelValues("wait_timeout").Inc()
				return nil
			}
			deadline = time.Now().Add(rs.opt.Wait)
			waiting = true
			rs.waiters.Add(1)
			rs.wake()
		}
		left := time.Until(deadline)
		if left <= 0 {
			for {
				t := rs.timedOut.Load()
				if t >= pos || rs.timedOut.CompareAndSwap(t, pos) {
					break
				}
			}
			rs.waits.Observe(rs.opt.Wait.Seconds())
			rs.toPrimary.WithLabelValues("wait_timeout").Inc()
			return nil
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		t.Stop()
	}
}

// failed takes a replica out of use after a read on it failed for a
// reason of the server or the connection; the poller puts it back when it
// answers again.
func (rs *replicaSet) failed(r *replica, err error) {
	rs.toPrimary.WithLabelValues("replica_failed").Inc()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "40001" {
		return // a query cancelled by a recovery conflict: the replica is fine
	}
	r.failed.Store(time.Now().UnixNano())
	if r.state.CompareAndSwap(replicaUp, replicaDown) {
		rs.log.Warn("read on replica failed: taking it out of use until it answers", "replica", r.name, "err", err)
		rs.broadcast()
	}
}

func (rs *replicaSet) status() []ReplicaStatus {
	out := make([]ReplicaStatus, 0, len(rs.list))
	for _, r := range rs.list {
		s := ReplicaStatus{Name: r.name, LagSeconds: -1, ReplayLSN: r.replay.Load()}
		if lag := r.lag.Load(); lag >= 0 {
			s.LagSeconds = time.Duration(lag).Seconds()
		}
		switch {
		case r.state.Load() == replicaNotReplica:
			s.Status = "not_replica"
		case r.state.Load() == replicaDown:
			s.Status = "down"
		case !r.usable(rs.opt.MaxLag):
			s.Status = "lagging"
		default:
			s.Status = "ok"
		}
		out = append(out, s)
	}
	return out
}

// retryOnPrimary reports whether a read that failed on a replica should
// be run again on the primary: the replica or the connection failed, or
// replay cancelled the query (a recovery conflict), not the read itself.
func retryOnPrimary(err error) bool {
	var nr noRetry
	if errors.Is(err, ErrNotFound) || errors.Is(err, pgx.ErrNoRows) || errors.As(err, &nr) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "40001" {
		return true
	}
	return IsUnavailable(err)
}

// noRetry marks a read error after which the read must not run again
// (it already handed rows to its caller).
type noRetry struct{ error }

func (e noRetry) Unwrap() error { return e.error }

// onReader runs a read on the pool pick chooses, and again on the primary
// when a replica fails it (for a reason of the replica, not of the read).
// fn must be safe to run twice.
func onReader[T any](ctx context.Context, s *Store, fn func(db *pgxpool.Pool) (T, error)) (T, error) {
	if s.replicas == nil {
		return fn(s.pool)
	}
	r := s.replicas.pick(ctx)
	if r == nil {
		return fn(s.pool)
	}
	v, err := fn(r.pool)
	if err != nil && ctx.Err() == nil && retryOnPrimary(err) {
		s.replicas.failed(r, err)
		return fn(s.pool)
	}
	return v, err
}

// Replicas reports each configured read replica (none without
// DATABASE_READ_URLS).
func (s *Store) Replicas() []ReplicaStatus {
	if s.replicas == nil {
		return nil
	}
	return s.replicas.status()
}
