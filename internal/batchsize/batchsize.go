package batchsize

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// growAfter is how many batches must apply in a row before the batch
// size doubles back toward its most.
const growAfter = 10

// Size is how many records a batch may hold now: the configured most,
// halved (from the failed batch's own size) each time a batch outlives
// the store's deadline for it, and doubled back after growAfter batches
// applied in a row. Without it, a batch that a loaded PostgreSQL applies
// more slowly than its deadline is retried at the same size, times out
// again, and the writer never moves. A batch always takes at least one
// transaction, whatever the size.
type Size struct {
	mu           sync.Mutex
	max, cur     int
	appliedInRow int
}

// New is a Size starting at, and never above, max records.
func New(max int) *Size { return &Size{max: max, cur: max} }

// Now is the records a batch may hold.
func (b *Size) Now() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// TimedOut halves the size, or the size of the batch that timed out
// (records) when that was smaller; changed is false when the size stays
// (it is 1 already).
func (b *Size) TimedOut(records int) (size int, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.appliedInRow = 0
	next := max(1, min(b.cur, records)/2)
	if next == b.cur {
		return b.cur, false
	}
	b.cur = next
	return b.cur, true
}

// Applied counts a batch applied; every growAfter in a row, the size
// doubles, up to the configured one.
func (b *Size) Applied() (size int, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == b.max {
		return b.cur, false
	}
	if b.appliedInRow++; b.appliedInRow < growAfter {
		return b.cur, false
	}
	b.appliedInRow = 0
	b.cur = min(b.max, 2*b.cur)
	return b.cur, true
}

// IsTimeout reports whether err is a statement cut by its deadline
// rather than refused or failed: the same batch, smaller, may pass.
func IsTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}
