package webhook

import (
	"sync"
	"time"
)

// Circuit breaker settings.
const (
	breakerThreshold   = 5 // consecutive failures that open the circuit
	breakerMinCooldown = 5 * time.Second
	breakerMaxCooldown = 5 * time.Minute
)

// breaker is one endpoint's circuit in this worker: after a run of failed
// attempts it opens, and jobs for the endpoint wait instead of tying up
// senders; after a cooldown one attempt probes it, closing the circuit on
// success and doubling the cooldown on failure.
type breaker struct {
	mu        sync.Mutex
	failures  int
	openUntil time.Time
	cooldown  time.Duration
	probing   bool
	minCool   time.Duration
}

// allow reports whether an attempt may go now; when not, until is when
// the circuit half-opens and cooldown its current cooldown.
func (b *breaker) allow(now time.Time) (ok bool, until time.Time, cooldown time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.openUntil.IsZero():
		return true, time.Time{}, 0
	case now.Before(b.openUntil):
		return false, b.openUntil, b.cooldown
	case b.probing:
		return false, now.Add(b.cooldown / 2), b.cooldown
	}
	b.probing = true
	return true, time.Time{}, 0
}

// record notes an attempt's result (ok: the endpoint answered sanely).
func (b *breaker) record(ok bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.failures, b.openUntil, b.cooldown, b.probing = 0, time.Time{}, 0, false
		return
	}
	b.failures++
	if b.probing {
		b.probing = false
		b.cooldown = min(2*b.cooldown, breakerMaxCooldown)
		b.openUntil = now.Add(b.cooldown)
		return
	}
	if b.failures >= breakerThreshold && b.openUntil.IsZero() {
		b.cooldown = b.minCool
		if b.cooldown <= 0 {
			b.cooldown = breakerMinCooldown
		}
		b.openUntil = now.Add(b.cooldown)
	}
}

// open reports whether the circuit is open (or probing) now.
func (b *breaker) open() bool {
	open, _ := b.state()
	return open
}

// state reports, under the breaker's lock, whether it is open and whether
// it has no failure on record (a closed, healthy breaker).
func (b *breaker) state() (open, healthy bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.openUntil.IsZero(), b.failures == 0
}

// breakers holds one breaker per webhook.
type breakers struct {
	mu      sync.Mutex
	m       map[string]*breaker
	minCool time.Duration
}

func (bs *breakers) get(id string) *breaker {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.m == nil {
		bs.m = map[string]*breaker{}
	}
	b, ok := bs.m[id]
	if !ok {
		b = &breaker{minCool: bs.minCool}
		bs.m[id] = b
	}
	return b
}

// openCount is how many circuits are open; closed ones are forgotten.
func (bs *breakers) openCount() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	n := 0
	for id, b := range bs.m {
		// One read under the breaker's lock: a sender records results
		// concurrently.
		switch open, healthy := b.state(); {
		case open:
			n++
		case healthy:
			delete(bs.m, id)
		}
	}
	return n
}
