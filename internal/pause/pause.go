// Package pause waits a while unless a context ends first: the one sleep of
// the long-running loops (retries, polls, backoffs) that must stop at once
// when their process does.
package pause

import (
	"context"
	"time"
)

// For waits d or until ctx ends, whichever comes first; it reports whether
// ctx is still alive (false: stop). A d of zero or less returns at once.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
