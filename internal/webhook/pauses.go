package webhook

import (
	"sync"
	"time"
)

// pauses are the receivers that asked this worker to wait (Retry-After).
type pauses struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (p *pauses) set(id string, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]time.Time{}
	}
	if len(p.m) > 10_000 {
		clear(p.m)
	}
	if until.After(p.m[id]) {
		p.m[id] = until
	}
}

// until reports how long id is still paused at now.
func (p *pauses) until(id string, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.m[id]
	if !ok {
		return 0, false
	}
	if !now.Before(u) {
		delete(p.m, id)
		return 0, false
	}
	return u.Sub(now), true
}
