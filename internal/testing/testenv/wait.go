package testenv

import (
	"context"
	"testing"
	"time"
)

// maxPoll is the longest pause between two checks of a WaitFor condition:
// the slowest of the package copies it replaced, so that no condition
// asks a server more often than it did (some of them ask through a
// per-IP rate limit that a faster poll would use up).
const maxPoll = 20 * time.Millisecond

// Patience is the deadline of a wait for something that is bound to
// happen: far longer than it takes even on a loaded machine (two cores
// shared by several test runs), so that only a hang reaches it. A test
// waits for the event with this outer deadline rather than with a budget
// of what it should take; the few tests whose deadline is the assertion
// (it must happen before something else would) pass their own.
const Patience = 2 * time.Minute

// reportMargin is how long before the test binary's own deadline (go test
// -timeout) a wait gives up, so that a hang fails with the state it saw
// rather than with the binary's panic.
const reportMargin = 10 * time.Second

// WaitFor checks cond until it holds and returns how long that took; when
// it still does not hold after within, the test fails, naming what it
// waited for. within is an outer deadline, not a budget: Patience for
// anything that will happen. The pause between checks starts at a
// millisecond and doubles up to maxPoll: a state that holds briefly (a
// transaction open, a process mid-write) is seen when it comes soon, and
// a condition that queries a server costs it at most fifty checks a
// second. A condition that can say what it sees is better given to
// WaitForState, whose failure says it.
func WaitFor(tb testing.TB, what string, within time.Duration, cond func() bool) time.Duration {
	tb.Helper()
	return WaitForState(tb, what, within, func() (bool, string) { return cond(), "" })
}

// WaitForState is WaitFor for a condition that also describes the state
// it saw (a count, a status, the last error): when the wait gives up, the
// failure names the last one, so that a hang says where it stopped.
func WaitForState(tb testing.TB, what string, within time.Duration, cond func() (ok bool, state string)) time.Duration {
	tb.Helper()
	start := time.Now()
	end, why := start.Add(within), within.String()
	if d, ok := testDeadline(tb); ok && d.Add(-reportMargin).Before(end) {
		end = d.Add(-reportMargin)
		why = end.Sub(start).Round(time.Millisecond).String() + ", the test binary's deadline near"
	}
	pause := time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(end) {
			if state == "" {
				tb.Fatalf("%s: not within %s", what, why)
			}
			tb.Fatalf("%s: not within %s; last seen: %s", what, why, state)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
}

// testDeadline is the test binary's deadline, when tb is a test run with
// one.
func testDeadline(tb testing.TB) (time.Time, bool) {
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		return t.Deadline()
	}
	return time.Time{}, false
}

// Every paces a WaitForState condition: it is asked at most once per d.
// For a condition that asks a server through a rate limit (or one costly
// to ask), which WaitFor's faster checks would use up.
func Every(d time.Duration, cond func() (bool, string)) func() (bool, string) {
	var last time.Time
	return func() (bool, string) {
		if wait := d - time.Since(last); !last.IsZero() && wait > 0 {
			time.Sleep(wait)
		}
		last = time.Now()
		return cond()
	}
}

// Context is a context for a long step of a test (a browser session, a
// large generation) with an outer deadline, not a budget: within, or
// shortly before the test binary's deadline when that comes first, so a
// loaded machine slows the step without failing it and a hang still fails
// with the step's own error rather than the binary's panic. It ends with
// the test.
func Context(tb testing.TB, within time.Duration) context.Context {
	tb.Helper()
	end := time.Now().Add(within)
	if d, ok := testDeadline(tb); ok && d.Add(-reportMargin).Before(end) {
		end = d.Add(-reportMargin)
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	tb.Cleanup(cancel)
	return ctx
}
