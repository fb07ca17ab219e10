package testenv

import (
	"testing"
	"time"
)

// maxPoll is the longest pause between two checks of a WaitFor condition:
// the slowest of the package copies it replaced, so that no condition
// asks a server more often than it did (some of them ask through a
// per-IP rate limit that a faster poll would use up).
const maxPoll = 20 * time.Millisecond

// WaitFor checks cond until it holds and returns how long that took; when
// it still does not hold after within, the test fails, naming what it
// waited for. The pause between checks starts at a millisecond and
// doubles up to maxPoll: a state that holds briefly (a transaction open,
// a process mid-write) is seen when it comes soon, and a condition that
// queries a server costs it at most fifty checks a second.
func WaitFor(tb testing.TB, what string, within time.Duration, cond func() bool) time.Duration {
	tb.Helper()
	start := time.Now()
	pause := time.Millisecond
	for !cond() {
		if time.Since(start) > within {
			tb.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
	return time.Since(start)
}
