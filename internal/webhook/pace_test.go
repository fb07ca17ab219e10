package webhook

import (
	"context"
	"strings"
	"testing"
	"time"
)

// window feeds one control window of n live latencies d, starting at t,
// and returns the next window's start.
func window(p *pace, t time.Time, n int, d time.Duration) time.Time {
	for i := range n {
		p.observe(d, t.Add(time.Duration(i)*time.Millisecond))
	}
	return t.Add(paceWindow)
}

// TestPaceFollowsTheLiveLatency: the reference is the live latency
// measured while no recovery runs; while one runs, windows whose live p90
// is over the target cut the rate, down to the floor and never below;
// windows under it, or without live deliveries, raise it, up to the
// ceiling and never above.
func TestPaceFollowsTheLiveLatency(t *testing.T) {
	p := newPace(100, 5000, 500)
	at := time.Unix(1_800_000_000, 0)
	p.observe(5*time.Millisecond, at) // opens the first window
	for range 10 {
		at = window(p, at, 20, 5*time.Millisecond)
	}
	p.observe(5*time.Millisecond, at) // closes the last
	if p.ref != 5*time.Millisecond {
		t.Fatalf("reference %s, want 5ms", p.ref)
	}
	if got := p.target(); got != 5*time.Millisecond+paceSlack {
		t.Fatalf("target %s, want the reference + %s", got, paceSlack)
	}
	if p.current() != 500 {
		t.Fatalf("no recovery ran: the rate moved to %.0f", p.current())
	}

	p.begin()
	last := p.current()
	for range 40 {
		at = window(p, at, 20, 40*time.Millisecond)
		if r := p.current(); r > last || r < 100 {
			t.Fatalf("live p90 40ms over a 9ms target: rate %.0f after %.0f", r, last)
		}
		last = p.current()
	}
	if last != 100 {
		t.Fatalf("rate %.0f, want the floor 100", last)
	}
	// The reference is not learnt while a recovery runs.
	if p.ref != 5*time.Millisecond {
		t.Fatalf("reference moved to %s during a recovery", p.ref)
	}
	for range 60 {
		at = window(p, at, 20, 6*time.Millisecond)
		if r := p.current(); r < last || r > 5000 {
			t.Fatalf("live p90 6ms under a 10ms target: rate %.0f after %.0f", r, last)
		}
		last = p.current()
	}
	if last != 5000 {
		t.Fatalf("rate %.0f, want the ceiling 5000", last)
	}
	// A handful of slow deliveries (under a tenth) does not brake.
	at = window(p, at, 18, 6*time.Millisecond)
	at = window(p, at, 1, time.Second)
	p.observe(6*time.Millisecond, at)
	if p.current() != 5000 {
		t.Fatalf("one slow delivery in 20 cut the rate to %.0f", p.current())
	}
	// Without live deliveries there is nothing to protect: it grows.
	p.rate = 1000
	p.window = p.window[:0]
	p.started = at
	p.control(at.Add(paceWindow))
	if p.current() <= 1000 {
		t.Fatalf("a window without live deliveries kept the rate at %.0f", p.current())
	}
	// After the recovery, the reference is learnt again once settled.
	p.end(at)
	at = window(p, at.Add(paceWindow), 20, 50*time.Millisecond)
	p.observe(50*time.Millisecond, at)
	if p.ref != 5*time.Millisecond {
		t.Fatalf("reference %s learnt right after a recovery, while it settles", p.ref)
	}
	at = at.Add(paceSettle)
	at = window(p, at, 20, 50*time.Millisecond)
	p.observe(50*time.Millisecond, at)
	if p.ref <= 5*time.Millisecond {
		t.Fatalf("reference %s not learnt after the recovery settled", p.ref)
	}
}

// TestPaceSteps: a step is a recovery's share of a fifth of a second,
// at least paceMinBatch, never more than the recovery's own limit.
func TestPaceSteps(t *testing.T) {
	p := newPace(100, 5000, 5000)
	p.begin()
	if got := p.step(5000); got != 1000 {
		t.Fatalf("one recovery at 5000/s: step %d, want 1000", got)
	}
	for range 3 {
		p.begin()
	}
	if got := p.step(5000); got != 250 {
		t.Fatalf("four recoveries at 5000/s: step %d, want 250", got)
	}
	if got := p.step(20); got != 20 {
		t.Fatalf("a recovery limited to 20 per step: step %d", got)
	}
	p.rate = 100
	if got := p.step(500); got != paceMinBatch {
		t.Fatalf("slow pace: step %d, want %d", got, paceMinBatch)
	}
	if got := p.step(3); got != 3 {
		t.Fatalf("slow pace, a recovery limited to 3: step %d", got)
	}
	// The start rate is clamped to the bounds.
	if r := newPace(100, 5000, 50_000).current(); r != 5000 {
		t.Fatalf("start rate %.0f", r)
	}
	if r := newPace(0, 0, 0).current(); r != 1 {
		t.Fatalf("degenerate bounds: rate %.0f", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if newPace(1, 1, 1).take(ctx, 1000) {
		t.Fatal("take with an ended context and no tokens reported true")
	}
}

// TestLiveGate: recovery work passes at once while no live work is in
// progress, waits for live work to end, and gives up with its context.
func TestLiveGate(t *testing.T) {
	g := newLiveGate()
	ctx := context.Background()
	if !g.wait(ctx, time.Hour) {
		t.Fatal("an idle gate held recovery work")
	}
	g.begin(2)
	g.end(1)
	if g.busy() != 1 {
		t.Fatalf("busy %d, want 1", g.busy())
	}
	passed := make(chan bool)
	go func() { passed <- g.wait(ctx, time.Hour) }()
	select {
	case <-passed:
		t.Fatal("recovery work passed while live work was in progress")
	case <-time.After(50 * time.Millisecond):
	}
	g.end(1)
	if !<-passed {
		t.Fatal("the gate did not open when the live work ended")
	}
	g.end(5) // more ends than begins never go negative
	if g.busy() != 0 || !g.wait(ctx, time.Hour) {
		t.Fatalf("busy %d after extra ends", g.busy())
	}
	g.begin(1)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if g.wait(cctx, time.Hour) {
		t.Fatal("a wait with an ended context reported true")
	}
	// Bounded: live work that never stops still lets a recovery on.
	if !g.wait(ctx, time.Millisecond) {
		t.Fatal("a bounded wait reported false")
	}
	g.begin(0)
	g.end(0)
	if g.busy() != 1 {
		t.Fatalf("begin(0)/end(0) changed the count to %d", g.busy())
	}
}

// TestRecoveryConcurrencyFromEnv: ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY
// defaults to 2 and refuses anything but a whole number from 1 to 10,000.
func TestRecoveryConcurrencyFromEnv(t *testing.T) {
	get := func(v string) func(string) string {
		return func(k string) string {
			if k == "ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY" {
				return v
			}
			return ""
		}
	}
	if c, err := ConfigFromEnv(get("")); err != nil || c.RecoveryConcurrency != 2 {
		t.Fatalf("default: %d %v", c.RecoveryConcurrency, err)
	}
	if c, err := ConfigFromEnv(get("7")); err != nil || c.RecoveryConcurrency != 7 {
		t.Fatalf("7: %d %v", c.RecoveryConcurrency, err)
	}
	for _, bad := range []string{"0", "-1", "two", "1e3", "3.5", "0x10", "10001", "99999999999999999999", "+", "\x00", strings.Repeat("9", 1000)} {
		if _, err := ConfigFromEnv(get(bad)); err == nil || !strings.Contains(err.Error(), "ATTESTD_WEBHOOK_RECOVERY_CONCURRENCY") {
			t.Errorf("%q: %v, want an error naming the variable", bad, err)
		}
	}
}
