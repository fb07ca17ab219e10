package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Allow after Close.
var ErrClosed = errors.New("rate limiter closed")

// errTimeout marks a round trip that exceeded Config.Timeout.
var errTimeout = errors.New("redis round trip timed out")

// errDegraded answers decisions that were queued when Redis failed.
var errDegraded = errors.New("redis unavailable")

// Decision is the outcome of one request.
type Decision struct {
	Allowed bool
	// Limit is the configured limit (0 when limiting is disabled).
	Limit int
	// Remaining is how many more requests the client may make right now.
	Remaining int
	// Reset is how long until the oldest request counted against the
	// client leaves the window, freeing a slot.
	Reset time.Duration
	// RetryAfter is how long a refused client must wait; 0 when allowed.
	RetryAfter time.Duration
	// Local is true when this node's in-memory window decided because
	// Redis was unavailable (or the client was still over the limit in it
	// just after Redis came back).
	Local bool

	at int64 // time of the decision on the deciding clock, ns (tests)
}

// Limiter limits requests per client with a sliding window shared by all
// nodes through Redis, falling back to a per-node window when Redis is
// unavailable. It is safe for concurrent use.
type Limiter struct {
	cfg      Config
	rdb      redis.UniversalClient
	resolver *IPResolver
	local    *localWindow
	log      *slog.Logger
	m        *metrics

	limitArg   any // script arguments, built once
	windowArg  any
	limitBytes []byte
	node       string // unique per Limiter: prefix of script members
	seq        atomic.Uint64

	queue    chan *pending
	pool     sync.Pool
	degraded atomic.Bool
	// recoveredUntil (local clock, ns; 0 = none): for one window after Redis
	// came back, clients this node admitted while it was down stay limited
	// by the local window too, since Redis never saw those requests.
	recoveredUntil atomic.Int64
	// multiKey: decide a batch with one call of the batch script (all keys
	// on one server: a plain *redis.Client); otherwise a pipeline of
	// single-key calls.
	multiKey    atomic.Bool
	wakeProbe   chan struct{}
	closing     chan struct{}
	closeOnce   sync.Once
	wg          sync.WaitGroup
	lastItemLog atomic.Int64
	flightsMu   sync.Mutex
	flights     []*flight // one per sender
	// clockOffset is the local window's clock minus the Redis clock (ns),
	// as last seen by a round trip.
	clockOffset atomic.Int64
}

// pending is one decision waiting for its round trip.
type pending struct {
	key    string // Redis key
	member string // pipeline path: unique member of the sorted set
	res    Decision
	err    error
	done   chan struct{}
}

// New returns a limiter deciding in rdb (a *redis.Client, a
// *redis.ClusterClient, ...). It registers its metrics with reg when reg is
// not nil, and logs to log (slog.Default() when nil). It does not fail when
// Redis is unreachable: it starts degraded and recovers when Redis answers.
// Call Close when done.
func New(rdb redis.UniversalClient, cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Limiter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if rdb == nil && cfg.Limit > 0 {
		return nil, errors.New("rate limit: a Redis client is required")
	}
	if log == nil {
		log = slog.Default()
	}
	resolver, err := NewIPResolver(cfg.TrustedProxies, cfg.ProxyHeader)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	l := &Limiter{
		cfg:        cfg,
		rdb:        rdb,
		resolver:   resolver,
		log:        log.With("component", "ratelimit"),
		m:          m,
		limitArg:   cfg.Limit,
		windowArg:  cfg.Window.Microseconds(),
		limitBytes: []byte(strconv.Itoa(cfg.Limit)),
		node:       hex.EncodeToString(id[:]) + ":",
		queue:      make(chan *pending, 4*cfg.MaxBatch*cfg.Pipelines),
		wakeProbe:  make(chan struct{}, 1),
		closing:    make(chan struct{}),
	}
	if _, single := rdb.(*redis.Client); single && !cfg.SingleKeyScripts {
		l.multiKey.Store(true)
	}
	l.pool.New = func() any { return &pending{done: make(chan struct{}, 1)} }
	if cfg.Limit == 0 {
		return l, nil // disabled: no goroutines, Allow always allows
	}
	l.local = newLocalWindow(cfg.Limit, cfg.Window, cfg.Now)
	if err := l.loadScript(); err != nil {
		l.markDegraded(fmt.Errorf("load rate-limit script: %w", err))
	}
	l.wg.Add(cfg.Pipelines + 3)
	for range cfg.Pipelines {
		go l.sender()
	}
	go l.watchdog()
	go l.prober()
	go l.janitor()
	return l, nil
}

// Config returns the limiter's configuration, defaults filled in.
func (l *Limiter) Config() Config { return l.cfg }

// Resolver returns the client-IP resolver the middleware uses, so that
// logs can name the same client.
func (l *Limiter) Resolver() *IPResolver { return l.resolver }

// Degraded reports whether Redis is unavailable and this node limits with
// its own in-memory window (for /health).
func (l *Limiter) Degraded() bool { return l.degraded.Load() }

// Close stops the limiter's goroutines. Decisions still waiting are made
// by the local window; Allow returns ErrClosed afterwards.
func (l *Limiter) Close() {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.wg.Wait()
	})
}

func (l *Limiter) isClosed() bool {
	select {
	case <-l.closing:
		return true
	default:
		return false
	}
}

// Allow decides one request of the client identified by key (for HTTP, the
// middleware uses ClientKey of the client IP). It does not fail when Redis
// is unavailable: the local window decides and Decision.Local says so. It
// returns an error only when ctx ends before the decision or after Close.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	if l.cfg.Limit == 0 {
		return Decision{Allowed: true}, nil
	}
	return l.allow(ctx, key, l.cfg.KeyPrefix+key)
}

func (l *Limiter) allow(ctx context.Context, key, redisKey string) (Decision, error) {
	if l.isClosed() {
		return Decision{}, ErrClosed
	}
	if l.degraded.Load() {
		return l.localAllow(key), nil
	}
	if until := l.recoveredUntil.Load(); until != 0 {
		if l.local.clock() >= until {
			l.recoveredUntil.CompareAndSwap(until, 0)
		} else if d, full := l.local.full(key); full {
			l.m.count(d)
			return d, nil
		}
	}
	p := l.pool.Get().(*pending)
	p.key = redisKey
	select {
	case l.queue <- p: // the common case, without a full select
	default:
		select {
		case l.queue <- p:
		case <-l.closing:
			return Decision{}, ErrClosed
		case <-ctx.Done():
			return Decision{}, fmt.Errorf("rate limit decision: %w", ctx.Err())
		}
	}
	if done := ctx.Done(); done == nil {
		select {
		case <-p.done:
		case <-l.closing:
			return Decision{}, ErrClosed // p may still be in use: not pooled
		}
	} else {
		select {
		case <-p.done:
		case <-l.closing:
			return Decision{}, ErrClosed
		case <-done:
			return Decision{}, fmt.Errorf("rate limit decision: %w", ctx.Err())
		}
	}
	d, err := p.res, p.err
	*p = pending{done: p.done}
	l.pool.Put(p)
	if err != nil {
		return l.localAllow(key), nil
	}
	if d.Allowed {
		// Shadow it locally, on the local clock (without reading it: the
		// offset to the Redis clock is measured once per round trip).
		l.local.record(key, d.at+l.clockOffset.Load())
	}
	return d, nil // counted by the sender
}

// localAllow decides in this node's window.
func (l *Limiter) localAllow(key string) Decision {
	d := l.local.allow(key)
	l.m.count(d)
	return d
}

func (l *Limiter) member() string {
	var b [32]byte
	n := copy(b[:], l.node)
	return string(strconv.AppendUint(b[:n], l.seq.Add(1), 36))
}

// sender is one pipeline: it takes the next waiting decision at once and
// whatever else queued up meanwhile (up to MaxBatch), and sends them in
// one round trip.
func (l *Limiter) sender() {
	defer l.wg.Done()
	batch := make([]*pending, 0, l.cfg.MaxBatch)
	f := &flight{}
	l.flightsMu.Lock()
	l.flights = append(l.flights, f)
	l.flightsMu.Unlock()
	for {
		select {
		case p := <-l.queue:
			batch = append(batch[:0], p)
		case <-l.closing:
			l.drainTo(ErrClosed)
			return
		}
	fill:
		for len(batch) < l.cfg.MaxBatch {
			select {
			case p := <-l.queue:
				batch = append(batch, p)
			default:
				break fill
			}
		}
		l.m.batchSize.Observe(float64(len(batch)))
		l.roundTrip(f, batch)
		clear(batch)
	}
}

// drainTo answers the decisions waiting in the queue with err, so the
// local window decides them.
func (l *Limiter) drainTo(err error) {
	for {
		select {
		case p := <-l.queue:
			p.err = err
			p.done <- struct{}{}
		default:
			return
		}
	}
}

// roundTrip decides batch in one round trip (two if Redis lost the
// scripts). It answers every pending decision: from Redis, or, when Redis
// errs or the watchdog finds it past Config.Timeout, with an error so that
// the local window decides.
func (l *Limiter) roundTrip(f *flight, batch []*pending) {
	deadline := time.Now().Add(l.cfg.Timeout)
	if l.multiKey.Load() {
		if batch = l.execMulti(f, deadline, batch); len(batch) == 0 {
			return
		}
	}
	retry := l.execPipeline(f, deadline, batch, false)
	if len(retry) > 0 {
		// NOSCRIPT: Redis restarted or flushed its scripts. EVAL loads it.
		retry = l.execPipeline(f, deadline, retry, true)
		l.fail(retry, errors.New("rate-limit script missing after EVAL"))
	}
}

// flight is a sender's Redis call in progress. go-redis bounds socket I/O
// by its own timeouts (seconds) unless the client has
// ContextTimeoutEnabled, so the watchdog answers the call's decisions when
// it passes its deadline; the sender then drops the late reply.
type flight struct {
	mu       sync.Mutex
	active   bool
	expired  bool
	deadline time.Time
	items    []*pending
}

// begin marks items as in flight until deadline.
func (f *flight) begin(deadline time.Time, items []*pending) {
	f.mu.Lock()
	f.active, f.expired, f.deadline, f.items = true, false, deadline, items
	f.mu.Unlock()
}

// end reports whether the caller may answer the items: false when the
// watchdog already did.
func (f *flight) end() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active, f.items = false, nil
	return !f.expired
}

// expire answers the items with fail when the flight is past its deadline
// at now.
func (f *flight) expire(now time.Time, fail func([]*pending)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active || f.expired || now.Before(f.deadline) {
		return
	}
	f.expired = true
	fail(f.items) // under the lock: the sender reuses the slice after end
}

// watchdog enforces Config.Timeout on the senders' calls and, while the
// limiter is degraded, hands decisions still queued to the local window
// (senders may be stuck in a call to a hung Redis).
func (l *Limiter) watchdog() {
	defer l.wg.Done()
	tick := time.NewTicker(max(l.cfg.Timeout/4, 5*time.Millisecond))
	defer tick.Stop()
	timeout := func(items []*pending) {
		l.m.errTimeout.Inc()
		l.markDegraded(errTimeout) // before anyone hears of it
		l.fail(items, errTimeout)
	}
	for {
		select {
		case <-l.closing:
			return
		case now := <-tick.C:
			l.flightsMu.Lock()
			flights := l.flights
			l.flightsMu.Unlock()
			for _, f := range flights {
				f.expire(now, timeout)
			}
			if l.degraded.Load() {
				l.drainTo(errDegraded)
			}
		}
	}
}

// fail answers items with err, so the local window decides them.
func (l *Limiter) fail(items []*pending, err error) {
	for _, p := range items {
		p.err = err
		p.done <- struct{}{}
	}
}

// answer fills p's decision from the script's allowed, remaining, reset
// (µs) and now (µs), and wakes its caller.
func (l *Limiter) answer(p *pending, allowed, remaining, reset, now int64) {
	p.res = Decision{
		Allowed:   allowed == 1,
		Limit:     l.cfg.Limit,
		Remaining: int(remaining),
		Reset:     time.Duration(reset) * time.Microsecond,
		at:        now * 1000,
	}
	if !p.res.Allowed {
		p.res.RetryAfter = p.res.Reset
	}
	p.done <- struct{}{}
}

// tally counts a batch's Redis decisions in the metrics (once per batch:
// shared counters are costly to bump per request from many cores).
func (l *Limiter) tally(allowed, limited int) {
	if allowed > 0 {
		l.m.allowedRedis.Add(float64(allowed))
	}
	if limited > 0 {
		l.m.limitedRedis.Add(float64(limited))
	}
}

// execMulti decides items with one call of the batch script. It returns
// the items left to decide one key per command (when the server refused
// a multi-key script: a proxy sharding keys), having answered the others.
func (l *Limiter) execMulti(f *flight, deadline time.Time, items []*pending) (left []*pending) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	keys := make([]string, len(items))
	for i, p := range items {
		keys[i] = p.key
	}
	// Member suffixes are "<node>:<seq>:<i>", never equal to a pipelined
	// request's "<node>:<seq>" nor to another batch's.
	args := []any{l.limitArg, l.windowArg, l.member() + ":"}
	f.begin(deadline, items)
	reply, err := l.rdb.EvalSha(ctx, batchScript.Hash(), keys, args...).Slice()
	if redis.HasErrorPrefix(err, "NOSCRIPT") {
		reply, err = l.rdb.Eval(ctx, batchScriptSrc, keys, args...).Slice()
	}
	if !f.end() {
		return nil // the watchdog answered them
	}
	if err == nil {
		if err = l.answerReply(items, reply); err == nil {
			return nil
		}
	}

	if crossSlot(err) {
		l.multiKey.Store(false)
		l.log.Warn("Redis refused a multi-key script (sharded behind one address?): one command per decision from now on", "err", err)
		return items
	}
	l.m.errOther.Inc()
	l.fail(items, err)
	l.noteFailure(err)
	return nil
}

// errKeyFailed answers a decision whose key failed in the batch script.
var errKeyFailed = errors.New("rate-limit script failed for this key")

// answerReply answers items from a script's reply {now, then allowed,
// remaining, time per item}, times as 16-digit µs (allowed -1: that key
// failed). It answers none of them when the reply is malformed.
func (l *Limiter) answerReply(items []*pending, reply []any) error {
	bad := func(why string) error {
		return fmt.Errorf("rate-limit script: malformed reply for %d keys (%s): %.80v", len(items), why, reply)
	}
	if len(reply) != 1+3*len(items) {
		return bad("length")
	}
	now, ok := parseMicros(reply[0])
	if !ok {
		return bad("now")
	}
	// Check everything before answering anyone.
	allowed, limited, failed := 0, 0, 0
	for i := range items {
		a, ok1 := reply[1+3*i].(int64)
		_, ok2 := reply[2+3*i].(int64)
		switch {
		case !ok1 || !ok2:
			return bad("integers")
		case a == -1:
			failed++
			continue
		case a == 1:
			allowed++
		case a == 0:
			limited++
		default:
			return bad("allowed")
		}
		if _, ok := parseMicros(reply[3+3*i]); !ok {
			return bad("time")
		}
	}
	l.clockOffset.Store(l.local.clock() - now*1000)
	l.tally(allowed, limited)
	window := l.cfg.Window.Microseconds()
	for i, p := range items {
		a, r := reply[1+3*i].(int64), reply[2+3*i].(int64)
		if a == -1 {
			p.err = errKeyFailed
			p.done <- struct{}{}
			continue
		}
		t, _ := parseMicros(reply[3+3*i])
		l.answer(p, a, r, t+window-now, now)
	}
	if failed > 0 {
		l.m.errOther.Inc()
		l.noteFailure(fmt.Errorf("%w (%d of %d keys; another type at the key?)", errKeyFailed, failed, len(items)))
	}
	return nil
}

// parseMicros reads a script's 16-digit time (µs since the epoch).
func parseMicros(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok || len(s) != 16 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// execPipeline sends items as a pipeline of single-key scripts, answers
// them, and returns the ones that failed with NOSCRIPT (unanswered).
func (l *Limiter) execPipeline(f *flight, deadline time.Time, items []*pending, eval bool) (noscript []*pending) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(items))
	for i, p := range items {
		keys := []string{p.key}
		if eval {
			cmds[i] = pipe.Eval(ctx, windowScript, keys, l.limitArg, l.windowArg, p.member)
		} else {
			p.member = l.member()
			cmds[i] = pipe.EvalSha(ctx, keyScript.Hash(), keys, l.limitArg, l.windowArg, p.member)
		}
	}
	f.begin(deadline, items)
	_, _ = pipe.Exec(ctx)
	if !f.end() {
		return nil // the watchdog answered them
	}
	var failed error
	for i, p := range items {
		reply, err := cmds[i].Slice()
		switch {
		case err == nil:
			if err = l.answerReply(items[i:i+1], reply); err == nil {
				continue
			}
		case !eval && redis.HasErrorPrefix(err, "NOSCRIPT"):
			noscript = append(noscript, p)
			continue
		}
		p.err = err
		failed = err
		p.done <- struct{}{}
	}
	if failed != nil {
		l.m.errOther.Inc()
		l.noteFailure(failed)
	}
	return noscript
}

// noteFailure degrades the limiter when err means Redis is unavailable,
// and otherwise logs it (at most every 10 s).
func (l *Limiter) noteFailure(err error) {
	if unavailable(err) {
		l.markDegraded(err)
		return
	}
	if now := time.Now().UnixNano(); now-l.lastItemLog.Load() > int64(10*time.Second) {
		l.lastItemLog.Store(now)
		l.log.Error("rate-limit script failed; local window decided", "err", err)
	}
}

// crossSlot tells errors of a server that cannot run a script over keys of
// different shards.
func crossSlot(err error) bool {
	return redis.HasErrorPrefix(err, "CROSSSLOT") || redis.HasErrorPrefix(err, "MOVED") ||
		redis.HasErrorPrefix(err, "ASK") || strings.Contains(strings.ToLower(err.Error()), "non local key")
}

// unavailable tells errors that mean "Redis cannot serve us now" (network,
// timeouts, loading, failover, out of memory) from errors of one command.
func unavailable(err error) bool {
	if errors.Is(err, errKeyFailed) {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return true // network, pool, context
	}
	return redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsClusterDownError(err) ||
		redis.IsTryAgainError(err) || redis.IsMasterDownError(err) ||
		redis.HasErrorPrefix(err, "OOM") || redis.HasErrorPrefix(err, "BUSY") || redis.HasErrorPrefix(err, "NOAUTH")
}

// markDegraded switches to the local window, once per outage.
func (l *Limiter) markDegraded(cause error) {
	if !l.degraded.CompareAndSwap(false, true) {
		return
	}
	l.m.fallbackActive.Set(1)
	l.m.fallbacks.Inc()
	l.log.Warn("Redis unavailable: rate limiting with this node's in-memory window until it is back", "err", cause)
	select {
	case l.wakeProbe <- struct{}{}:
	default:
	}
}

// prober checks a degraded limiter's Redis every ProbeEvery and switches
// back when it answers (loading the script, which a restarted Redis lost).
func (l *Limiter) prober() {
	defer l.wg.Done()
	tick := time.NewTicker(l.cfg.ProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-l.wakeProbe:
		case <-tick.C:
		}
		if !l.degraded.Load() {
			continue
		}
		if err := l.loadScript(); err != nil {
			continue
		}
		l.recoveredUntil.Store(l.local.clock() + int64(l.cfg.Window))
		l.degraded.Store(false)
		l.m.fallbackActive.Set(0)
		l.log.Info("Redis is back: rate limiting with the shared window again")
	}
}

// loadScript loads the script into Redis within Config.Timeout.
func (l *Limiter) loadScript() error {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := keyScript.Load(ctx, l.rdb).Err()
		if err == nil {
			err = batchScript.Load(ctx, l.rdb).Err()
		}
		done <- err
	}()
	timer := time.NewTimer(l.cfg.Timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return errTimeout
	}
}

// janitor forgets idle keys of the local window.
func (l *Limiter) janitor() {
	defer l.wg.Done()
	every := max(l.cfg.Window, time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-l.closing:
			return
		case <-tick.C:
			l.local.sweep()
		}
	}
}
