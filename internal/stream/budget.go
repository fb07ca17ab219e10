package stream

import "sync/atomic"

// budget is a node's byte budget for what its streams hold in memory for
// their clients: write buffers with events not yet taken, and rows read
// from PostgreSQL for a catch-up. A stream takes bytes before it holds
// them and gives them back once written; what cannot be taken is not
// read. The stream counts bounded the number of streams; this bounds
// their bytes, whatever their clients do.
type budget struct {
	max  int64
	held atomic.Int64
}

// take takes n bytes, or reports false (taking nothing) when that would
// pass the budget. What is held never passes it, not even for a moment.
func (b *budget) take(n int64) bool { return b.takeUpTo(n, n, 0) == n }

// takeUpTo takes as many bytes as are free, at most want, while at least
// keep bytes stay free after it; it takes nothing and returns 0 when that
// is fewer than least.
func (b *budget) takeUpTo(least, want, keep int64) int64 {
	for {
		held := b.held.Load()
		n := min(want, b.max-keep-held)
		if n < least {
			return 0
		}
		if b.held.CompareAndSwap(held, held+n) {
			return n
		}
	}
}

// force takes n bytes even past the budget (a buffer that grew to hold
// one event larger than its room: the bytes are held already).
func (b *budget) force(n int64) { b.held.Add(n) }

// give gives n bytes back.
func (b *budget) give(n int64) { b.held.Add(-n) }

// Held is how many bytes are taken.
func (b *budget) Held() int64 { return b.held.Load() }
