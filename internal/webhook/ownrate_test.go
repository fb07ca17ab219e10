package webhook

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/webhook/queue"
)

// The hostile matrix of a webhook's own rate (slot, the turns a job holds,
// the order a lane's jobs ask in): job records this service did not write
// as it would, hostile host names, rates at and past the bounds, many
// asking at once, and tickets settled out of order or twice.

// TestHeldOwnTurn: which own turns a job comes back with are kept. Only a
// turn taken at the webhook's current rate, not far ahead and not missed,
// is waited for or sent on; anything else asks for a new turn (never a
// wait of a day, never a send past the rate).
func TestHeldOwnTurn(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	for _, c := range []struct {
		name      string
		own       int64
		ownRate   int
		rate      int
		ok, early bool
	}{
		{"none", 0, 0, 10, false, false},
		{"none, a rate recorded", 0, 10, 10, false, false},
		{"on it", ms(0), 10, 10, true, false},
		{"just before: waits in place", ms(turnLead), 10, 10, true, false},
		{"at the edge of the lead", ms(turnLead + turnEarly), 10, 10, true, false},
		{"early: held again", ms(time.Second), 10, 10, false, true},
		{"23 h ahead: held again", ms(23 * time.Hour), 10, 10, false, true},
		{"25 h ahead: not ours", ms(25 * time.Hour), 10, 10, false, false},
		{"late within turnLate", ms(-time.Second), 10, 10, true, false},
		{"missed", ms(-3 * time.Second), 10, 10, false, false},
		{"the rate changed", ms(time.Second), 5, 10, false, false},
		{"the rate removed", ms(time.Second), 10, 0, false, false},
		{"a turn without a rate", ms(time.Second), 0, 0, false, false},
		{"a negative rate recorded", ms(time.Second), -10, -10, false, false},
		{"a negative time", -1, 10, 10, false, false},
		{"the epoch's first ms", 1, 10, 10, false, false},
		{"max int64", math.MaxInt64, 10, 10, false, false},
		{"min int64", math.MinInt64, 10, 10, false, false},
		{"1<<62", 1 << 62, 10, 10, false, false},
	} {
		job := &queue.Job{Own: c.own, OwnRate: c.ownRate}
		turn, ok, early := heldOwnTurn(job, c.rate, now)
		if ok != c.ok || early != c.early {
			t.Errorf("%s: ok %v early %v, want %v %v", c.name, ok, early, c.ok, c.early)
		}
		if (ok || early) && turn.UnixMilli() != c.own {
			t.Errorf("%s: turn %s, want the one recorded", c.name, turn)
		}
	}
}

// TestSlotHostileHosts: whatever a host is called, a webhook's own
// schedule is its own: its first ask goes at once, its second waits a
// whole interval, another webhook at that host is not held by it, and
// the same webhook at another host shares nothing (a host's schedules are
// keyed by the host). Rates out of bounds are no own rate (0 or less) or
// the finest schedule Redis keeps (a µs).
func TestSlotHostileHosts(t *testing.T) {
	rdb, prefix := capClient(t)
	ctx := context.Background()
	hosts := []string{"", "a.example", "A.EXAMPLE", "a\x00b", "a\rb", "bücher.example", "xn--bcher-kva.example",
		"{", "}", "{}", "a{b}c", "}:own:1:wh_x", "[::1]", "127.0.0.1", strings.Repeat("z", 3000), "a b", "%00", "😀"}
	for i, h := range hosts {
		id := "wh_hostile"
		if w, own := slot(ctx, rdb, prefix, nil, h, id, 1, false); w != 0 || !own {
			t.Errorf("host %d %q: the first ask waits %s (own only %v)", i, h, w, own)
			continue
		}
		if w, own := slot(ctx, rdb, prefix, nil, h, id, 1, false); w < 900*time.Millisecond || w > time.Second || !own {
			t.Errorf("host %d %q: the second ask at 1/s waits %s (own only %v)", i, h, w, own)
		}
		if w, _ := slot(ctx, rdb, prefix, nil, h, "wh_other", 1, false); w != 0 {
			t.Errorf("host %d %q: another webhook waits %s", i, h, w)
		}
	}
	// Each host above had its own schedule of wh_hostile: "a.example" and
	// "A.EXAMPLE" too (the worker lowers the host before it asks).
	n, err := rdb.Keys(ctx, prefix+"whcap:*:own:1:wh_hostile").Result()
	if err != nil || len(n) != len(hosts) {
		t.Errorf("%d own schedules of wh_hostile for %d hosts: %v", len(n), len(hosts), err)
	}
	host := newHostCap(rdb, prefix, "v", 1000)
	for _, c := range []struct {
		rate    int
		waits   bool // a second ask right after the first waits
		ownOnly bool // and takes its own turn only
	}{
		{-1, false, false}, {0, false, false}, {math.MinInt32, false, false},
		{1, true, true}, {3, true, true}, {100_000, false, false}, {math.MaxInt32, false, false},
	} {
		id := "wh_rate" + strings.ReplaceAll(strconv.Itoa(c.rate), "-", "neg")
		slot(ctx, rdb, prefix, host, "rates.example", id, c.rate, false)
		w, own := slot(ctx, rdb, prefix, host, "rates.example", id, c.rate, false)
		if (w > 50*time.Millisecond) != c.waits || own != c.ownOnly {
			t.Errorf("rate %d: the second ask waits %s, own only %v; want waiting %v, own only %v", c.rate, w, own, c.waits, c.ownOnly)
		}
	}
}

// TestSlotConcurrentAsks: many deliveries of one webhook asking at once,
// through two clients (two workers), each get a turn of their own, one
// interval apart; with a host cap that binds they are the host's turns,
// as far apart. eps is the longest a call took: the measured turn is
// within it of the real one.
func TestSlotConcurrentAsks(t *testing.T) {
	rdb, prefix := capClient(t)
	rdb2, _ := capClient(t)
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		cap     *hostCap
		rate    int
		every   time.Duration
		ownOnly bool
	}{
		{"own rate only", nil, 2, 500 * time.Millisecond, true},
		{"own rate under a host cap that does not bind", newHostCap(rdb, prefix, "v", 1000), 2, 500 * time.Millisecond, true},
		{"a host cap that binds", newHostCap(rdb, prefix, "u", 2), 100, 500 * time.Millisecond, false},
	} {
		const n = 12
		type ask struct {
			lo, hi time.Time // the turn is within them
			own    bool
		}
		var asks []ask
		var eps time.Duration
		// A measurement whose calls took too long to tell turns apart
		// (a loaded machine) judges nothing: it is taken again, on a new
		// webhook and host, at most three times.
		for attempt := 0; attempt < 3; attempt++ {
			host, id := fmt.Sprintf("conc-%s-%d.example", strings.ReplaceAll(c.name, " ", "-"), attempt), fmt.Sprintf("wh_conc%d", attempt)
			asks = make([]ask, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rdb
					if i%2 == 1 {
						r = rdb2
					}
					start := time.Now()
					w, own := slot(ctx, r, prefix, c.cap, host, id, c.rate, false)
					asks[i] = ask{start.Add(w), time.Now().Add(w), own}
				}()
			}
			wg.Wait()
			sort.Slice(asks, func(i, j int) bool { return asks[i].lo.Before(asks[j].lo) })
			eps = 0
			for _, a := range asks {
				eps = max(eps, a.hi.Sub(a.lo))
			}
			if eps <= c.every/4 {
				break
			}
		}
		if eps > c.every/4 {
			t.Fatalf("%s: a call took %s three times: too long to tell turns %s apart", c.name, eps, c.every)
		}
		for i, a := range asks {
			// Under a host cap the first ask takes both turns at once.
			if want := c.ownOnly && (i > 0 || c.cap == nil); a.own != want {
				t.Errorf("%s: ask %d own only %v, want %v", c.name, i, a.own, want)
			}
			if i > 0 {
				if gap := a.lo.Sub(asks[i-1].hi); gap < c.every-2*eps-5*time.Millisecond {
					t.Errorf("%s: turns %d and %d are %s apart, want %s (eps %s)", c.name, i-1, i, a.lo.Sub(asks[i-1].lo), c.every, eps)
				}
			}
		}
	}
}

// TestLaneBooking: a lane's jobs ask for their turns in the order they
// reached it. A job waits for every earlier one to ask (or go without
// asking); tickets settled out of order, twice, or by a job without a
// lane (a recovered one) change nothing else; a stopping worker's jobs do
// not wait.
func TestLaneBooking(t *testing.T) {
	d := &dispatcher{lanes: map[string]*lane{}}
	l := &lane{}
	tasks := make([]*task, 6)
	for i := range tasks {
		tasks[i] = &task{lane: l, ticket: l.tickets}
		l.tickets++
	}
	// waiting: tk is still waiting half a second after it started to
	// (then it is let go).
	waiting := func(tk *task) bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { d.awaitBooking(ctx, tk); close(done) }()
		select {
		case <-done:
			return false
		case <-time.After(500 * time.Millisecond):
		}
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("awaitBooking outlived its context")
		}
		return true
	}
	// returns: tk does not wait. Its call returns before bookingWait
	// could have ended it (three quarters of it: a call that waits for
	// its turn returns no sooner than bookingWait), however long short
	// of that the machine's load makes it take.
	returns := func(tk *task) bool {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { d.awaitBooking(ctx, tk); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(bookingWait * 3 / 4):
			return false
		}
	}
	if !returns(tasks[0]) {
		t.Fatal("the first job waits")
	}
	if !waiting(tasks[2]) {
		t.Fatal("the third job asks before the first two did")
	}
	d.booked(tasks[1]) // out of order: kept until the first asks
	d.booked(tasks[1]) // twice: nothing more
	if l.turn != 0 || !waiting(tasks[2]) {
		t.Fatalf("after the second job asked before the first: turn %d", l.turn)
	}
	// The third job is woken once the first asks.
	released := make(chan struct{})
	go func() { d.awaitBooking(context.Background(), tasks[2]); close(released) }()
	time.Sleep(20 * time.Millisecond)
	d.booked(tasks[0])
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("the third job was not woken when the first two had asked")
	}
	if l.turn != 2 {
		t.Fatalf("turn %d after two jobs asked, want 2", l.turn)
	}
	d.booked(tasks[4])
	d.booked(tasks[3])
	if l.turn != 2 || len(l.passed) != 2 || !waiting(tasks[5]) {
		t.Fatalf("turn %d, passed %v after jobs 5 and 4 asked before job 3", l.turn, l.passed)
	}
	d.booked(tasks[2])
	if l.turn != 5 || len(l.passed) != 0 || !returns(tasks[5]) {
		t.Fatalf("turn %d, passed %v after jobs 3, 4 and 5 asked", l.turn, l.passed)
	}
	d.booked(tasks[0]) // again, long after: nothing
	if l.turn != 5 {
		t.Fatalf("a job booked twice moved the turn to %d", l.turn)
	}
	free := &task{} // recovered: no lane
	d.booked(free)
	if !returns(free) {
		t.Fatal("a job without a lane waits")
	}
	// A job whose earlier ones never ask (their worker is stopping)
	// returns when its context ends.
	ctx, cancel := context.WithCancel(context.Background())
	late := &task{lane: &lane{tickets: 4}, ticket: 3}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	d.awaitBooking(ctx, late)
	if took := time.Since(start); took > bookingWait {
		t.Fatalf("awaitBooking held a stopping job %s", took)
	}
}
