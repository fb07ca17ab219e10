package webhook

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testenv"
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
	if n, err := rdb.Exists(ctx, prefix+"whcap:u:a\x00b").Result(); err != nil || n != 1 {
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
