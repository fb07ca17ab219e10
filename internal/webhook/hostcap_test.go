package webhook

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// capClient is a Redis client of the shared test server, and a prefix of
// this test's own.
func capClient(t *testing.T) (redis.UniversalClient, string) {
	url, prefix := testenv.Redis(t)
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "redis url")
	opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 3*time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb, prefix
}

// TestHostCapQueuesTurns: requests over a host's cap each get their own
// turn, one interval apart, whichever worker (cap) asks, however many ask
// at once; a request that only asks whether a turn is free now takes none;
// the burst goes at once; hosts are apart, whatever their name.
func TestHostCapQueuesTurns(t *testing.T) {
	rdb, prefix := capClient(t)
	ctx := context.Background()
	a, b := newHostCap(rdb, prefix, "u", 10), newHostCap(rdb, prefix, "u", 10) // two workers
	const n = 60
	type got struct {
		start time.Time
		wait  time.Duration
		taken bool
	}
	res := make([]got, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := a
			if i%2 == 1 {
				c = b
			}
			start := time.Now()
			w, ok := c.turn(ctx, "farm.example", true)
			res[i] = got{start, w, ok}
		}()
	}
	wg.Wait()
	end := time.Now()
	earliest := res[0].start
	for _, r := range res {
		if !r.taken {
			t.Fatal("a queued request took no turn")
		}
		if r.start.Before(earliest) {
			earliest = r.start
		}
	}
	// Turns (asked at start + wait) are distinct and an interval apart: the
	// k-th is no sooner than k intervals after the first ask, and all fall
	// within n intervals of the last answer.
	turns := make([]time.Time, n)
	for i, r := range res {
		turns[i] = r.start.Add(r.wait)
	}
	sort.Slice(turns, func(i, j int) bool { return turns[i].Before(turns[j]) })
	slack := end.Sub(earliest) + 5*time.Millisecond // when each ask reached Redis is only known within this
	for k, at := range turns {
		if lo := earliest.Add(time.Duration(k)*100*time.Millisecond - slack); at.Before(lo) {
			t.Fatalf("turn %d at %s, before %s: the cap of 10/s gave turns closer than 100 ms", k, at.Sub(earliest), lo.Sub(earliest))
		}
		if hi := end.Add(time.Duration(k)*100*time.Millisecond + slack); at.After(hi) {
			t.Fatalf("turn %d at %s, after %s: turns were skipped", k, at.Sub(earliest), hi.Sub(earliest))
		}
	}
	// Asking without queueing takes nothing while the host is booked: the
	// free turn asked for twice is the same one, and the next queued turn.
	t1 := time.Now()
	w1, ok := a.turn(ctx, "farm.example", false)
	t2 := time.Now()
	w2, ok2 := b.turn(ctx, "farm.example", false)
	t3 := time.Now()
	w3, ok3 := a.turn(ctx, "farm.example", true)
	if ok || ok2 || w1 < 3*time.Second || !ok3 {
		t.Fatalf("a free-now ask on a booked host: %s %v, %s %v", w1, ok, w2, ok2)
	}
	if d := t2.Add(w2).Sub(t1.Add(w1)).Abs(); d > time.Since(t1) {
		t.Fatalf("two free-now asks saw turns %s apart: the first took one", d)
	}
	if d := t3.Add(w3).Sub(t1.Add(w1)); d < -time.Since(t1) {
		t.Fatalf("the next queued turn is %s before the free one", -d)
	}

	// A burst of a tenth of a second's worth goes at once: of 30 asks made
	// in e, the first 10 and those whose turn came meanwhile (one per 10 ms).
	c := newHostCap(rdb, prefix, "v", 100)
	now, t0 := 0, time.Now()
	for range 30 {
		if w, ok := c.turn(ctx, "burst.example", true); ok && w == 0 {
			now++
		}
	}
	if e := time.Since(t0); now < 10 || now > 10+int(e/(10*time.Millisecond))+1 {
		t.Fatalf("burst: %d of 30 at once in %s, want 10 and one per 10 ms", now, e)
	}

	// Hostile host names: each its own schedule, the first turn free.
	for _, host := range []string{"", strings.Repeat("a", 2000), "bücher.example", "a\x00b", "*", "{farm.example}", "farm.example:443",
		"FARM.example", "..", "\n", "'; FLUSHALL"} {
		if w, ok := a.turn(ctx, host, true); !ok || w != 0 {
			t.Errorf("host %q: first turn %s %v", host, w, ok)
		}
	}
	if n, err := rdb.Exists(ctx, prefix+"whcap:{h:a\x00b}:u").Result(); err != nil || n != 1 {
		t.Errorf("the NUL host's key: %d %v", n, err)
	}
	// No cap admits everything; a Redis that cannot be reached lets requests go.
	var none *hostCap
	if w, ok := none.turn(ctx, "x", true); !ok || w != 0 || none.String() != "none" {
		t.Error("a nil cap held a request")
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer dead.Close()
	if w, ok := newHostCap(dead, prefix, "u", 1).turn(ctx, "x", true); !ok || w != 0 {
		t.Errorf("a Redis that cannot be reached held a request: %s %v", w, ok)
	}
	if newHostCap(rdb, prefix, "u", 0) != nil || newHostCap(rdb, prefix, "u", -5) != nil {
		t.Error("a rate of 0 or less is a cap")
	}
}

// TestOnTurn: when a request held for a turn may go.
func TestOnTurn(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		turn      time.Time
		ok, early bool
	}{
		{time.Time{}, false, false},
		{now, true, false},
		{now.Add(50 * time.Millisecond), true, false},
		{now.Add(turnLead), true, false}, // due back turnLead before it: waits in place
		{now.Add(turnLead + turnEarly), true, false},
		{now.Add(turnLead + turnEarly + time.Millisecond), false, true},
		{now.Add(time.Second), false, true},
		{now.Add(-time.Second), true, false},
		{now.Add(-3 * time.Second), false, false},
		{now.Add(23 * time.Hour), false, true},
		{now.Add(25 * time.Hour), false, false},
		{time.UnixMilli(-1), false, false},
		{time.UnixMilli(1 << 62), false, false},
	} {
		if ok, early := onTurn(c.turn, now); ok != c.ok || early != c.early {
			t.Errorf("turn %s: ok %v early %v, want %v %v", fmt.Sprint(c.turn.Sub(now)), ok, early, c.ok, c.early)
		}
	}
}

// TestDueFor: a request held for a turn is due back turnLead before it,
// never before now.
func TestDueFor(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct{ turn, want time.Time }{
		{now.Add(time.Second), now.Add(time.Second - turnLead)},
		{now.Add(turnLead), now},
		{now.Add(turnLead / 2), now},
		{now.Add(-time.Second), now},
		{time.Time{}, now},
	} {
		if got := dueFor(c.turn, now); !got.Equal(c.want) {
			t.Errorf("turn %s: due %s, want %s", c.turn.Sub(now), got.Sub(now), c.want.Sub(now))
		}
	}
}

// turnAt is when a turn is, as a client can know it: the script's clock
// read it somewhere between the call's start and its end, so the turn is
// the wait after a moment in [lo-wait, hi-wait]. A slow call (a loaded
// machine) widens the span; it never moves it.
type turnAt struct {
	lo, hi time.Time
	wait   time.Duration
}

// turnsOf asks slot n times for webhook id at host (rate: its own, cap:
// its host's) and returns when each turn is and whether it was an own
// turn only.
func turnsOf(t *testing.T, rdb redis.UniversalClient, prefix string, cap *hostCap, host, id string, rate, n int) ([]turnAt, []bool) {
	t.Helper()
	at, own := make([]turnAt, n), make([]bool, n)
	for i := range n {
		start := time.Now()
		w, o := slot(context.Background(), rdb, prefix, cap, host, id, rate, false)
		at[i], own[i] = turnAt{lo: start.Add(w), hi: time.Now().Add(w), wait: w}, o
	}
	return at, own
}

// onSchedule fails unless turn k of at can be first's turn plus k
// intervals: their spans meet (within a few ms of clock reading).
func onSchedule(t *testing.T, at []turnAt, k int, interval time.Duration, what string) {
	t.Helper()
	const slack = 5 * time.Millisecond
	lo, hi := at[0].lo.Add(time.Duration(k)*interval-slack), at[0].hi.Add(time.Duration(k)*interval+slack)
	if at[k].hi.Before(lo) || at[k].lo.After(hi) {
		t.Fatalf("%s: between %s and %s after the first turn, want %s", what,
			at[k].lo.Sub(at[0].hi), at[k].hi.Sub(at[0].lo), time.Duration(k)*interval)
	}
}

// TestOwnRateTakesTurns: a webhook's own rate is a schedule of turns, taken
// with its host's by one script. Over its own rate a delivery takes the
// webhook's next turn (one interval apart, in the order asked, the host's
// turn still to take on it) and never books the host ahead: another
// webhook at that host gets the host's turn at once. When the host binds,
// both are taken at the host's turn. On its own turn a delivery takes its
// host's turn, and a host turn later than its own moves the webhook's
// schedule past it. Keys of one host share a Redis Cluster slot, whatever
// the host's name; Redis unreachable lets deliveries go.
func TestOwnRateTakesTurns(t *testing.T) {
	rdb, prefix := capClient(t)
	ctx := context.Background()
	// Own rate only (no host cap): 10/s, turns 100 ms apart, each an own
	// turn, the first at once.
	at, own := turnsOf(t, rdb, prefix, nil, "a.example", "wh_a", 10, 20)
	if at[0].wait != 0 {
		t.Fatalf("the first turn waits %s", at[0].wait)
	}
	for i := range at {
		if !own[i] {
			t.Fatalf("turn %d: not an own turn", i)
		}
		onSchedule(t, at, i, 100*time.Millisecond, fmt.Sprintf("own turn %d", i))
	}
	// On its turn without a host cap: nothing more to ask.
	if w, o := slot(ctx, rdb, prefix, nil, "a.example", "wh_a", 10, true); w != 0 || o {
		t.Fatalf("on its own turn without a host cap: %s %v", w, o)
	}
	// Another webhook at the same host, and the host's cap: the first
	// ask takes both turns now; held by its own rate (2/s), the others
	// take own turns only, and the host stays free for a second webhook.
	host := newHostCap(rdb, prefix, "v", 50)
	at, own = turnsOf(t, rdb, prefix, host, "b.example", "wh_b", 2, 6)
	if own[0] || at[0].wait != 0 {
		t.Fatalf("first ask: own only %v, waits %s", own[0], at[0].wait)
	}
	for i := 1; i < len(at); i++ {
		if !own[i] {
			t.Fatalf("ask %d over the own rate booked the host", i)
		}
		onSchedule(t, at, i, 500*time.Millisecond, fmt.Sprintf("own turn %d at 2/s", i))
	}
	if w, _ := host.turn(ctx, "b.example", false); w != 0 {
		t.Fatalf("the host is booked %s ahead by a webhook held by its own rate", w)
	}
	if w, o := slot(ctx, rdb, prefix, host, "b.example", "wh_other", 0, false); w > 30*time.Millisecond || o {
		t.Fatalf("another webhook at the host waits %s", w)
	}
	// The host binds (5/s, the webhook's own rate 100/s): both at the
	// host's turns, 200 ms apart, sent on them.
	slow := newHostCap(rdb, prefix, "u", 5)
	at, own = turnsOf(t, rdb, prefix, slow, "c.example", "wh_c", 100, 5)
	if at[0].wait != 0 {
		t.Fatalf("the first host-bound turn waits %s", at[0].wait)
	}
	for i := range at {
		if own[i] {
			t.Fatalf("host-bound ask %d: own only", i)
		}
		onSchedule(t, at, i, 200*time.Millisecond, fmt.Sprintf("host turn %d", i))
	}
	// On its own turn, the host over its cap (booked 2 s ahead by
	// others): the delivery's turn is the host's, and the webhook's next
	// turn comes after it (its schedule moved), not at its own pace.
	for range 10 {
		slow.turn(ctx, "d.example", true)
	}
	t0 := time.Now()
	w, o := slot(ctx, rdb, prefix, slow, "d.example", "wh_d", 10, true)
	if o || w < 1800*time.Millisecond {
		t.Fatalf("on its own turn at a busy host: %s %v", w, o)
	}
	hostTurn := turnAt{lo: t0.Add(w), hi: time.Now().Add(w)}
	at, own = turnsOf(t, rdb, prefix, nil, "d.example", "wh_d", 10, 1) // its own schedule alone
	if !own[0] || at[0].hi.Before(hostTurn.lo.Add(100*time.Millisecond-5*time.Millisecond)) {
		t.Fatalf("the next own turn is at most %s after the host turn, want 100 ms", at[0].hi.Sub(hostTurn.lo))
	}
	// A changed rate is a schedule of its own.
	if w, _ := slot(ctx, rdb, prefix, nil, "b.example", "wh_b", 3, false); w != 0 {
		t.Fatalf("a new rate waits %s behind the old one's turns", w)
	}
	// Every key of a host is in one Redis Cluster slot.
	for _, h := range []string{"", "b.example", "{x}", "}", "{", "a{b}c", "a\x00b", strings.Repeat("z", 3000), "bücher.example", "{}"} {
		for _, class := range []string{"u", "v"} {
			want := keySlot(hostKey(prefix, class, h))
			if got := keySlot(ownKey(prefix, h, "wh_x", 7)); got != want {
				t.Errorf("host %q: own key in slot %d, host key (%s) in %d", h, got, class, want)
			}
			if got := keySlot(hostKey("{p}:", class, h)); got != keySlot(ownKey("{p}:", h, "wh_x", 7)) {
				t.Errorf("host %q under a tagged prefix: keys in two slots", h)
			}
		}
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer dead.Close()
	if w, o := slot(ctx, dead, prefix, newHostCap(dead, prefix, "u", 1), "x", "wh_x", 1, false); w != 0 || o {
		t.Errorf("a Redis that cannot be reached held a delivery: %s %v", w, o)
	}
}

// keySlot is a key's Redis Cluster slot: CRC16 (XMODEM) of its hash tag,
// mod 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
