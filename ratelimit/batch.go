package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

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
