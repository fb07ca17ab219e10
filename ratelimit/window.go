package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// localWindow is an in-memory sliding-window log with the same semantics as
// the Redis script: a request at time t is accepted when fewer than limit
// accepted requests of its key lie in (t-width, t]. It serves as the
// fallback while Redis is unavailable and shadows this node's accepted
// requests while Redis is healthy, so the fallback starts from what this
// node has seen rather than from nothing.
type localWindow struct {
	limit int
	width time.Duration
	now   func() time.Time
	base  time.Time
	seed  maphash.Seed
	shard [64]windowShard
}

type windowShard struct {
	mu   sync.Mutex
	logs map[uint64]*timeLog // by maphash of the key
	_    [40]byte            // keep shards on separate cache lines
}

// timeLog holds the accepted request times of one key, oldest first, in
// nanoseconds since the window's base.
type timeLog struct{ ts []int64 }

func newLocalWindow(limit int, width time.Duration, now func() time.Time) *localWindow {
	w := &localWindow{limit: limit, width: width, now: now, base: now(), seed: maphash.MakeSeed()}
	for i := range w.shard {
		w.shard[i].logs = make(map[uint64]*timeLog)
	}
	return w
}

// clock returns the window's time in nanoseconds (monotonic when the
// clock is time.Now).
func (w *localWindow) clock() int64 { return int64(w.now().Sub(w.base)) }

// shardOf returns key's shard and its hash, which stands for the key in
// the shard's map: no string to compare on lookup (a 64-bit collision
// between two live keys would only merge their local windows).
func (w *localWindow) shardOf(key string) (*windowShard, uint64) {
	h := maphash.String(w.seed, key)
	return &w.shard[h%uint64(len(w.shard))], h
}

// expire drops the times that left the window at now, returning the log's
// latest time (or now when the log is empty).
func (l *timeLog) expire(now, width int64) {
	i := 0
	for i < len(l.ts) && l.ts[i] <= now-width {
		i++
	}
	if i > 0 {
		l.ts = l.ts[:copy(l.ts, l.ts[i:])]
	}
}

// allow decides a request of key now, recording it when accepted.
func (w *localWindow) allow(key string) Decision {
	s, h := w.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := w.clock()
	l := s.logs[h]
	if l == nil {
		l = &timeLog{}
		s.logs[h] = l
	}
	return w.decide(l, now)
}

// decide applies the window to l at now (under the shard lock).
func (w *localWindow) decide(l *timeLog, now int64) Decision {
	width := int64(w.width)
	if n := len(l.ts); n > 0 && now < l.ts[n-1] {
		now = l.ts[n-1] // the clock went back: time stands still instead
	}
	l.expire(now, width)
	d := Decision{Limit: w.limit, Local: true, at: now}
	if len(l.ts) < w.limit {
		l.ts = append(l.ts, now)
		d.Allowed = true
		d.Remaining = w.limit - len(l.ts)
		d.Reset = time.Duration(l.ts[0] + width - now)
		return d
	}
	pivot := l.ts[len(l.ts)-w.limit]
	d.Reset = time.Duration(pivot + width - now)
	d.RetryAfter = d.Reset
	return d
}

// record notes a request of key accepted elsewhere (by Redis) at time now
// of the window's clock, keeping at most limit times.
func (w *localWindow) record(key string, now int64) {
	s, h := w.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[h]
	if l == nil {
		l = &timeLog{ts: make([]int64, 0, min(w.limit, 8))}
		s.logs[h] = l
	}
	if n := len(l.ts); n > 0 && now < l.ts[n-1] {
		now = l.ts[n-1]
	}
	l.expire(now, int64(w.width))
	if len(l.ts) >= w.limit {
		l.ts = l.ts[:copy(l.ts, l.ts[len(l.ts)-w.limit+1:])]
	}
	l.ts = append(l.ts, now)
}

// full returns a refusal when key already has limit accepted requests in
// the window (without recording anything), and ok=false otherwise.
func (w *localWindow) full(key string) (Decision, bool) {
	s, h := w.shardOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[h]
	if l == nil {
		return Decision{}, false
	}
	now := w.clock()
	if n := len(l.ts); n > 0 && now < l.ts[n-1] {
		now = l.ts[n-1]
	}
	l.expire(now, int64(w.width))
	if len(l.ts) < w.limit {
		return Decision{}, false
	}
	pivot := l.ts[len(l.ts)-w.limit]
	reset := time.Duration(pivot + int64(w.width) - now)
	return Decision{Limit: w.limit, Local: true, Reset: reset, RetryAfter: reset, at: now}, true
}

// sweep forgets keys without requests in the window, returning how many
// keys remain.
func (w *localWindow) sweep() int {
	now := w.clock()
	width := int64(w.width)
	left := 0
	for i := range w.shard {
		s := &w.shard[i]
		s.mu.Lock()
		for k, l := range s.logs {
			if n := len(l.ts); n == 0 || l.ts[n-1] <= now-width {
				delete(s.logs, k)
			}
		}
		left += len(s.logs)
		s.mu.Unlock()
	}
	return left
}
