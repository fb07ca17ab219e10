package indexer

import (
	"sync"
	"time"
)

// slotClock turns the indexer's lag in slots into seconds: it remembers
// when each newer chain slot was first seen, so the lag is how long ago
// the chain first stood past the slot through which the index is
// complete (attestd_indexer_lag_seconds). Safe for concurrent use.
type slotClock struct {
	mu      sync.Mutex
	seen    []slotSeen // chain slots as first seen, oldest first
	indexed uint64
}

type slotSeen struct {
	slot uint64
	at   time.Time
}

// slotClockSize bounds what is remembered: a lag older than the oldest
// entry reads as the oldest entry's age (a lower bound).
const slotClockSize = 4096

// chainAt records that the chain stood at slot at t (ignored unless newer
// than every slot seen).
func (c *slotClock) chainAt(slot uint64, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.seen); n > 0 && slot <= c.seen[n-1].slot {
		return
	}
	if len(c.seen) == slotClockSize {
		c.seen = append(c.seen[:0], c.seen[1:]...)
	}
	c.seen = append(c.seen, slotSeen{slot, t})
}

// indexedTo records the slot through which the index is complete.
func (c *slotClock) indexedTo(slot uint64) {
	c.mu.Lock()
	c.indexed = slot
	c.mu.Unlock()
}

// lag is how long ago the chain first stood past the indexed slot: 0 when
// the index has everything seen. Entries the index has passed are
// forgotten.
func (c *slotClock) lag(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.seen) && c.seen[i].slot <= c.indexed {
		i++
	}
	if i > 0 {
		c.seen = append(c.seen[:0], c.seen[i:]...)
	}
	if len(c.seen) == 0 {
		return 0
	}
	return max(now.Sub(c.seen[0].at), 0)
}
