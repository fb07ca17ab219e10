package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitFor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holds  int // the check that first holds (0: none does)
		within time.Duration
		fails  string // what the failure says, "" when it holds in time
	}{
		{name: "holds at once", holds: 1, within: time.Second},
		{name: "holds on the fifth check", holds: 5, within: time.Second},
		{name: "holds on the fiftieth check", holds: 50, within: 5 * time.Second},
		{name: "never holds", within: 30 * time.Millisecond, fails: "the thing: not within 30ms"},
		{name: "no time at all", within: 0, fails: "the thing: not within 0s"},
		{name: "no time, but it holds", holds: 1, within: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fatalRecorder{TB: t}
			checks := 0
			var took time.Duration
			done := make(chan struct{})
			start := time.Now()
			go func() {
				defer close(done)
				took = WaitFor(rec, "the thing", tc.within, func() bool {
					checks++
					return checks == tc.holds
				})
			}()
			<-done
			elapsed := time.Since(start)
			if rec.msg != tc.fails {
				t.Fatalf("failure %q, want %q", rec.msg, tc.fails)
			}
			if tc.fails != "" {
				if elapsed < tc.within {
					t.Errorf("gave up after %s, before %s", elapsed, tc.within)
				}
				if tc.within > 0 && checks < 2 {
					t.Errorf("checked %d times before giving up", checks)
				}
				return
			}
			if checks != tc.holds {
				t.Errorf("checked %d times, want %d", checks, tc.holds)
			}
			if took < 0 || took > elapsed {
				t.Errorf("returned %s, but the wait took %s", took, elapsed)
			}
		})
	}
}

// deadlineRecorder is a fatalRecorder run by a test binary whose deadline
// is at.
type deadlineRecorder struct {
	fatalRecorder
	at time.Time
}

func (r *deadlineRecorder) Deadline() (time.Time, bool) { return r.at, true }

// wait runs WaitForState on rec in a goroutine of its own (its Fatalf
// ends the goroutine) and returns how long the wait took.
func wait(rec testing.TB, within time.Duration, cond func() (bool, string)) time.Duration {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		WaitForState(rec, "the thing", within, cond)
	}()
	<-done
	return time.Since(start)
}

func TestWaitForStateNamesTheLastState(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	checks := 0
	wait(rec, 30*time.Millisecond, func() (bool, string) {
		checks++
		return false, fmt.Sprintf("%d rows", checks)
	})
	if want := fmt.Sprintf("the thing: not within 30ms; last seen: %d rows", checks); rec.msg != want {
		t.Fatalf("failure %q, want %q", rec.msg, want)
	}

	rec = &fatalRecorder{TB: t}
	wait(rec, time.Second, func() (bool, string) { return true, "done" })
	if rec.msg != "" {
		t.Fatalf("a condition that holds failed: %q", rec.msg)
	}
}

func TestWaitForStateGivesUpBeforeTheTestDeadline(t *testing.T) {
	rec := &deadlineRecorder{fatalRecorder: fatalRecorder{TB: t}, at: time.Now().Add(reportMargin + 50*time.Millisecond)}
	took := wait(rec, Patience, func() (bool, string) { return false, "stuck" })
	if took > 5*time.Second {
		t.Errorf("waited %s, past the test binary's deadline less the margin", took)
	}
	if !strings.Contains(rec.msg, "the test binary's deadline near; last seen: stuck") {
		t.Errorf("failure %q, want it to name the deadline and the state", rec.msg)
	}
}

func TestEveryPacesTheChecks(t *testing.T) {
	checks := 0
	start := time.Now()
	WaitForState(t, "the fifth check", time.Minute, Every(20*time.Millisecond, func() (bool, string) {
		checks++
		return checks == 5, ""
	}))
	if took := time.Since(start); took < 4*20*time.Millisecond {
		t.Fatalf("five checks paced 20 ms apart took %s", took)
	}
}
