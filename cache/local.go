package cache

import (
	"sync"
	"time"
)

// entry is a cached value with its expiry, on the monotonic clock.
type entry struct {
	val     []byte
	expires time.Duration
}

// clockBase is where monotonic counts from.
var clockBase = time.Now()

// monotonic is the time since the process started, read from the
// monotonic clock alone: time.Now reads the wall clock too, twice the
// cost on every cache hit, and expiries need no calendar.
func monotonic() time.Duration { return time.Since(clockBase) }

// entryOverhead approximates the map and header bytes of one entry.
const entryOverhead = 96

// local is an in-process map bounded by bytes. When a new value would go
// over the budget it evicts an arbitrary quarter of the entries (Go map
// order): cheap, and good enough for a working set that mostly fits.
type local struct {
	mu     sync.RWMutex
	m      map[string]entry
	bytes  int
	budget int
}

func newLocal(budget int) *local { return &local{m: make(map[string]entry, 1024), budget: budget} }

// lookup returns key's value unless it expired. The key may be a string
// or bytes: the map index converts bytes without copying.
func lookup[K string | []byte](l *local, key K, now time.Duration) ([]byte, bool) {
	l.mu.RLock()
	e, ok := l.m[string(key)]
	l.mu.RUnlock()
	if !ok || now > e.expires {
		return nil, false
	}
	return e.val, true
}

func (l *local) set(key string, val []byte, expires time.Duration) {
	size := len(key) + len(val) + entryOverhead
	if l.budget <= 0 || size > l.budget/8 {
		return // disabled, or one value would crowd out the rest
	}
	l.mu.Lock()
	if old, ok := l.m[key]; ok {
		l.bytes -= len(key) + len(old.val) + entryOverhead
	}
	if l.bytes+size > l.budget {
		drop := len(l.m)/4 + 1
		for k, e := range l.m {
			delete(l.m, k)
			l.bytes -= len(k) + len(e.val) + entryOverhead
			if drop--; drop == 0 {
				break
			}
		}
	}
	l.m[key] = entry{val: val, expires: expires}
	l.bytes += size
	l.mu.Unlock()
}

func (l *local) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.m)
}

func (l *local) size() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.bytes
}
