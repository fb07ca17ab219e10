package cache

import (
	"sync"
	"time"
)

// entry is a cached value with its expiry.
type entry struct {
	val     []byte
	expires time.Time
}

// local is a bounded in-process map. When full, it evicts an arbitrary
// tenth of its entries (Go map order), which is cheap and good enough for
// a working set that mostly fits.
type local struct {
	mu  sync.RWMutex
	m   map[string]entry
	max int
}

func newLocal(max int) *local { return &local{m: make(map[string]entry, 1024), max: max} }

func (l *local) get(key string, now time.Time) ([]byte, bool) {
	l.mu.RLock()
	e, ok := l.m[key]
	l.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return nil, false
	}
	return e.val, true
}

func (l *local) set(key string, val []byte, expires time.Time) {
	if l.max <= 0 {
		return
	}
	l.mu.Lock()
	if len(l.m) >= l.max {
		drop := l.max/10 + 1
		for k := range l.m {
			delete(l.m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	l.m[key] = entry{val: val, expires: expires}
	l.mu.Unlock()
}

func (l *local) clear() {
	l.mu.Lock()
	l.m = make(map[string]entry, 1024)
	l.mu.Unlock()
}

func (l *local) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.m)
}
