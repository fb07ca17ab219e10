package ratelimit

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// reference is the specification of the window, written the plain way:
// a request at t is accepted when fewer than limit accepted requests lie in
// (t-width, t]. It also computes what the limiter should report.
type reference struct {
	limit    int
	width    int64
	accepted []int64
}

func (r *reference) decide(t int64) (ok bool, remaining int, reset int64) {
	var in []int64
	for _, a := range r.accepted {
		if a > t-r.width && a <= t {
			in = append(in, a)
		}
	}
	if len(in) < r.limit {
		r.accepted = append(r.accepted, t)
		in = append(in, t)
		return true, r.limit - len(in), in[0] + r.width - t
	}
	return false, 0, in[len(in)-r.limit] + r.width - t
}

// checkWindowInvariants verifies the two promises on a history of decisions
// of one client (times in ns, in decision order): at most limit accepted in
// any window, and a refusal only when limit were accepted in the window.
func checkWindowInvariants(tb testing.TB, limit int, width int64, times []int64, allowed []bool) {
	tb.Helper()
	var acc []int64
	for i, t := range times {
		if allowed[i] {
			acc = append(acc, t)
		}
	}
	for i := range acc {
		n := 0
		for j := i; j < len(acc) && acc[j] < acc[i]+width; j++ {
			n++
		}
		if n > limit {
			tb.Fatalf("%d requests accepted in the window starting at %d (limit %d)", n, acc[i], limit)
		}
	}
	for i, t := range times {
		if allowed[i] {
			continue
		}
		n := 0
		for j := 0; j < i; j++ {
			if allowed[j] && times[j] > t-width && times[j] <= t {
				n++
			}
		}
		if n < limit {
			tb.Fatalf("request %d at %d refused with only %d accepted in its window (limit %d)", i, t, n, limit)
		}
	}
}

func TestLocalWindowTable(t *testing.T) {
	type step struct {
		advance       time.Duration
		wantAllowed   bool
		wantRemaining int
		wantReset     time.Duration
	}
	tests := []struct {
		name  string
		limit int
		width time.Duration
		steps []step
	}{
		{
			name: "limit 3 per 10s", limit: 3, width: 10 * time.Second,
			steps: []step{
				{0, true, 2, 10 * time.Second},
				{time.Second, true, 1, 9 * time.Second},
				{time.Second, true, 0, 8 * time.Second},
				{time.Second, false, 0, 7 * time.Second},      // refused: wait for the first
				{7*time.Second - 1, false, 0, 1},              // 1 ns before the first leaves
				{1, true, 0, time.Second},                     // first left exactly now
				{0, false, 0, time.Second},                    // refusals did not count
				{30 * time.Second, true, 2, 10 * time.Second}, // all gone
			},
		},
		{
			name: "limit 1", limit: 1, width: time.Second,
			steps: []step{
				{0, true, 0, time.Second},
				{999 * time.Millisecond, false, 0, time.Millisecond},
				{time.Millisecond, true, 0, time.Second},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock()
			w := newLocalWindow(tt.limit, tt.width, clk.Now)
			for i, s := range tt.steps {
				clk.Advance(s.advance)
				d := w.allow("k")
				if d.Allowed != s.wantAllowed || d.Remaining != s.wantRemaining || d.Reset != s.wantReset || !d.Local {
					t.Fatalf("step %d: got %+v, want allowed=%v remaining=%d reset=%s", i, d, s.wantAllowed, s.wantRemaining, s.wantReset)
				}
				if !d.Allowed && d.RetryAfter != d.Reset {
					t.Fatalf("step %d: RetryAfter %s != Reset %s", i, d.RetryAfter, d.Reset)
				}
			}
		})
	}
}

func TestLocalWindowRecordFullSweep(t *testing.T) {
	clk := newFakeClock()
	w := newLocalWindow(2, time.Second, clk.Now)
	if _, full := w.full("a"); full {
		t.Fatal("unknown key full")
	}
	w.record("a", w.clock())
	clk.Advance(100 * time.Millisecond)
	w.record("a", w.clock())
	w.record("a", w.clock()) // beyond the limit: keeps the latest two
	d, full := w.full("a")
	if !full || d.RetryAfter != time.Second || d.Allowed {
		t.Fatalf("full = %v %+v, want full with retry 1s", full, d)
	}
	if d := w.allow("b"); !d.Allowed {
		t.Fatal("keys are not independent")
	}
	if n := w.sweep(); n != 2 {
		t.Fatalf("sweep kept %d keys, want 2", n)
	}
	clk.Advance(time.Second)
	if _, full := w.full("a"); full {
		t.Fatal("still full after the window")
	}
	if n := w.sweep(); n != 0 {
		t.Fatalf("sweep kept %d keys after the window, want 0", n)
	}
	// A clock that goes back does not reopen the window.
	w.allow("c")
	w.allow("c")
	clk.Advance(-time.Hour)
	if d := w.allow("c"); d.Allowed {
		t.Fatal("clock going back let a request through")
	}
}

// TestLocalWindowProperty drives the in-memory window with random arrival
// times (bursts, gaps, ties) and compares every decision, remaining count
// and reset with the reference.
func TestLocalWindowProperty(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		limit := 1 + rng.IntN(8)
		width := time.Duration(1+rng.IntN(1000)) * time.Millisecond
		clk := newFakeClock()
		w := newLocalWindow(limit, width, clk.Now)
		ref := &reference{limit: limit, width: int64(width)}
		var times []int64
		var allowed []bool
		for i := 0; i < 400; i++ {
			switch rng.IntN(4) {
			case 0: // same instant
			case 1:
				clk.Advance(time.Duration(rng.Int64N(int64(width) / 4)))
			case 2:
				clk.Advance(time.Duration(rng.Int64N(int64(width))))
			default:
				clk.Advance(time.Duration(rng.Int64N(3 * int64(width))))
			}
			d := w.allow("client")
			ok, rem, reset := ref.decide(d.at)
			if d.Allowed != ok || d.Remaining != rem || int64(d.Reset) != reset {
				t.Fatalf("seed %d step %d (limit %d width %s): got %+v, reference allowed=%v remaining=%d reset=%d",
					seed, i, limit, width, d, ok, rem, reset)
			}
			times = append(times, d.at)
			allowed = append(allowed, d.Allowed)
		}
		checkWindowInvariants(t, limit, int64(width), times, allowed)
	}
}
