package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

// TestFleetSharesOneWindow: 150 requests of one IP spread over three
// nodes (three limiters, three Redis clients, one Redis) → exactly 100
// accepted; the next is accepted only once the oldest accepted left the
// window, which Retry-After announces.
func TestFleetSharesOneWindow(t *testing.T) {
	url, prefix := testenv.Redis(t)
	const window = 3 * time.Second
	cfg := Config{Limit: 100, Window: window, KeyPrefix: prefix}
	single := cfg
	single.SingleKeyScripts = true // nodes may differ in how they call Redis
	nodes := []*node{newNode(t, url, cfg), newNode(t, url, single), newNode(t, url, cfg)}
	const client = "203.0.113.7"

	accepted := 0
	for i := 0; i < 150; i++ {
		if i == 50 {
			// Two generations of members, so that the oldest leaving frees
			// some slots but not all.
			time.Sleep(300 * time.Millisecond)
		}
		r := do(t, nodes[i%3].app, client)
		if r.header[HeaderLimit] != "100" {
			t.Fatalf("request %d: RateLimit-Limit %q", i, r.header[HeaderLimit])
		}
		switch r.status {
		case 200:
			accepted++
			if want := strconv.Itoa(100 - accepted); r.header[HeaderRemaining] != want {
				t.Fatalf("request %d: RateLimit-Remaining %q, want %s", i, r.header[HeaderRemaining], want)
			}
			if _, ok := r.header[HeaderRetryAfter]; ok {
				t.Fatalf("request %d: Retry-After on an accepted request", i)
			}
		case 429:
			ra, err := strconv.Atoi(r.header[HeaderRetryAfter])
			if err != nil || ra < 1 || ra > 3 {
				t.Fatalf("request %d: Retry-After %q, want 1..3", i, r.header[HeaderRetryAfter])
			}
			if r.header[HeaderRemaining] != "0" || r.header[HeaderReset] != r.header[HeaderRetryAfter] {
				t.Fatalf("request %d: headers %v", i, r.header)
			}
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(r.body), &body); err != nil || body.Error.Code != "RATE_LIMITED" || body.Error.Message == "" {
				t.Fatalf("request %d: 429 body %s", i, r.body)
			}
		default:
			t.Fatalf("request %d: status %d", i, r.status)
		}
	}
	if accepted != 100 {
		t.Fatalf("accepted %d of 150, want exactly 100", accepted)
	}

	// What the server holds: 100 members; the oldest decides when the next
	// request may pass.
	admin := nodes[0].rdb
	ctx := context.Background()
	key := prefix + client
	if n := admin.ZCard(ctx, key).Val(); n != 100 {
		t.Fatalf("sorted set holds %d members, want 100", n)
	}
	oldest := admin.ZRangeWithScores(ctx, key, 0, 0).Val()[0]
	freeAt := int64(oldest.Score) + window.Microseconds() // server µs

	// Retry-After matches the oldest member, rounded up.
	before := serverTime(t, admin)
	r := do(t, nodes[1].app, client)
	after := serverTime(t, admin)
	if r.status != 429 {
		t.Fatalf("151st request: status %d", r.status)
	}
	ra, _ := strconv.ParseInt(r.header[HeaderRetryAfter], 10, 64)
	lo := ceilSeconds(time.Duration(freeAt-after) * time.Microsecond)
	hi := ceilSeconds(time.Duration(freeAt-before) * time.Microsecond)
	if ra < lo || ra > hi {
		t.Fatalf("Retry-After %d s, want between %d and %d (oldest frees at server time %d, now %d..%d)", ra, lo, hi, freeAt, before, after)
	}

	// Poll until accepted. Every refusal must have happened before the
	// oldest left, the acceptance after; refusals must not extend the wait.
	for i := 0; ; i++ {
		if i > 200 {
			t.Fatal("never accepted again")
		}
		before := serverTime(t, admin)
		r := do(t, nodes[i%3].app, client)
		after := serverTime(t, admin)
		if r.status == 429 {
			if before >= freeAt {
				t.Fatalf("refused at server time >= %d although the oldest left at %d", before, freeAt)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if after < freeAt {
			t.Fatalf("accepted by server time %d, before the oldest left at %d", after, freeAt)
		}
		// Nothing else touched the key: its members are the ones the script
		// kept plus this request.
		if want := strconv.FormatInt(100-admin.ZCard(ctx, key).Val(), 10); r.header[HeaderRemaining] != want {
			t.Fatalf("accepted with RateLimit-Remaining %q, want %s", r.header[HeaderRemaining], want)
		}
		if n := admin.ZCount(ctx, key, "-inf", strconv.FormatInt(freeAt-window.Microseconds(), 10)).Val(); n != 0 {
			t.Fatalf("%d members at or before the oldest remain", n)
		}
		break
	}
	if s := admin.ZScore(ctx, key, oldest.Member.(string)); s.Err() != redis.Nil {
		t.Fatalf("oldest member still present: %v", s)
	}
}

func TestClientsAreIndependent(t *testing.T) {
	url, prefix := testenv.Redis(t)
	n := newNode(t, url, Config{Limit: 3, Window: 30 * time.Second, KeyPrefix: prefix})
	count := func(peer string, tries int) (ok int) {
		for range tries {
			if do(t, n.app, peer).status == 200 {
				ok++
			}
		}
		return ok
	}
	tests := []struct {
		name  string
		peers []string // requests alternate over these peers
		want  int      // accepted of 2*limit requests
	}{
		{"one ipv4", []string{"198.51.100.1"}, 3},
		{"another ipv4 is not affected", []string{"198.51.100.2"}, 3},
		{"ipv6 same /64 shares a bucket", []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"}, 3},
		{"ipv6 next /64 is separate", []string{"2001:db8:1:3::1"}, 3},
		{"ipv4-mapped ipv6 is the ipv4 client", []string{"198.51.100.9", "::ffff:198.51.100.9"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := 0
			for i := range 6 {
				got += count(tt.peers[i%len(tt.peers)], 1)
			}
			if got != tt.want {
				t.Fatalf("accepted %d of 6, want %d", got, tt.want)
			}
		})
	}
}

func TestAllowlistAndDisabled(t *testing.T) {
	url, prefix := testenv.Redis(t)
	allow, _ := ParsePrefixes("192.0.2.0/24")
	n := newNode(t, url, Config{Limit: 1, Window: 30 * time.Second, KeyPrefix: prefix, Allowlist: allow})
	for i := range 5 {
		r := do(t, n.app, "192.0.2.44")
		if r.status != 200 || len(r.header) != 0 {
			t.Fatalf("allowlisted request %d: %d %v", i, r.status, r.header)
		}
	}
	if do(t, n.app, "198.51.100.1").status != 200 || do(t, n.app, "198.51.100.1").status != 429 {
		t.Fatal("others are still limited")
	}

	off := newNode(t, url, Config{Limit: 0, KeyPrefix: prefix})
	for i := range 5 {
		r := do(t, off.app, "198.51.100.1")
		if r.status != 200 || len(r.header) != 0 {
			t.Fatalf("disabled limiter, request %d: %d %v", i, r.status, r.header)
		}
	}
	if d, err := off.lim.Allow(context.Background(), "x"); err != nil || !d.Allowed {
		t.Fatalf("disabled Allow: %+v %v", d, err)
	}
}

// TestProxyHeaders: a spoofed X-Forwarded-For from an untrusted peer is
// ignored; behind a trusted proxy the right-most untrusted address counts.
func TestProxyHeaders(t *testing.T) {
	url, prefix := testenv.Redis(t)
	trusted, _ := ParsePrefixes("10.0.0.0/8")
	n := newNode(t, url, Config{Limit: 2, Window: 30 * time.Second, KeyPrefix: prefix, TrustedProxies: trusted})
	ctx := context.Background()

	// An untrusted client rotating fake addresses is still one client.
	got := 0
	for i := range 6 {
		r := do(t, n.app, "198.51.100.66", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
		if r.status == 200 {
			got++
		}
	}
	if got != 2 {
		t.Fatalf("spoofing client got %d accepted, want 2", got)
	}
	for i := range 6 {
		if k := prefix + fmt.Sprintf("203.0.113.%d", i); n.rdb.Exists(ctx, k).Val() != 0 {
			t.Fatalf("a spoofed address got a bucket: %s", k)
		}
	}

	// Behind the proxy: clients are told apart by the right-most untrusted
	// entry, whatever they put to its left.
	for _, client := range []string{"203.0.113.20", "203.0.113.21"} {
		got := 0
		for i := range 4 {
			xff := fmt.Sprintf("6.6.6.%d, %s, 10.1.1.1", i, client)
			if do(t, n.app, "10.0.0.1", "X-Forwarded-For", xff).status == 200 {
				got++
			}
		}
		if got != 2 {
			t.Fatalf("client %s behind proxy: %d accepted, want 2", client, got)
		}
		if n.rdb.ZCard(ctx, prefix+client).Val() != 2 {
			t.Fatalf("no bucket for %s", client)
		}
	}
	// The proxy itself was never limited as a client.
	if n.rdb.Exists(ctx, prefix+"10.0.0.1").Val() != 0 {
		t.Fatal("the proxy got a bucket")
	}
}

// TestRedisPropertyAgainstReference drives the shared window with random
// arrival times from several clients at once (so decisions travel in
// batches) and replays each client's decisions, at the server times the
// script used, through the reference.
func TestRedisPropertyAgainstReference(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("SingleKeyScripts=%v", single), func(t *testing.T) {
			t.Parallel()
			redisProperty(t, single)
		})
	}
}

func redisProperty(t *testing.T, single bool) {
	url, prefix := testenv.Redis(t)
	const limit, window = 5, 250 * time.Millisecond
	n := newNode(t, url, Config{Limit: limit, Window: window, KeyPrefix: prefix, SingleKeyScripts: single})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			key := fmt.Sprintf("client-%d", c)
			var ds []Decision
			for range 120 {
				switch rng.IntN(4) {
				case 0: // back to back
				case 1:
					time.Sleep(time.Duration(rng.Int64N(int64(window / 20))))
				case 2:
					time.Sleep(time.Duration(rng.Int64N(int64(window / 4))))
				default:
					time.Sleep(time.Duration(rng.Int64N(int64(window))))
				}
				d, err := n.lim.Allow(context.Background(), key)
				if err != nil || d.Local {
					t.Errorf("client %d: %+v %v", c, d, err)
					return
				}
				ds = append(ds, d)
			}
			ref := &reference{limit: limit, width: int64(window)}
			times := make([]int64, len(ds))
			allowed := make([]bool, len(ds))
			for i, d := range ds {
				ok, rem, reset := ref.decide(d.at)
				if d.Allowed != ok || d.Remaining != rem || int64(d.Reset) != reset {
					t.Errorf("client %d step %d: got %+v, reference allowed=%v remaining=%d reset=%d", c, i, d, ok, rem, reset)
					return
				}
				if !d.Allowed && d.RetryAfter != d.Reset {
					t.Errorf("client %d step %d: RetryAfter %s != Reset %s", c, i, d.RetryAfter, d.Reset)
				}
				times[i], allowed[i] = d.at, d.Allowed
			}
			checkWindowInvariants(t, limit, int64(window), times, allowed)
		}()
	}
	wg.Wait()
}

// TestConcurrentExactlyLimit hammers the batched path from many goroutines
// over three limiters: each client gets exactly limit accepted, and the
// accepted requests saw every Remaining value once.
func TestConcurrentExactlyLimit(t *testing.T) {
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("SingleKeyScripts=%v", single), func(t *testing.T) {
			concurrentExactlyLimit(t, single)
		})
	}
}

func concurrentExactlyLimit(t *testing.T, single bool) {
	url, prefix := testenv.Redis(t)
	const limit = 100
	cfg := Config{Limit: limit, Window: time.Minute, KeyPrefix: prefix, SingleKeyScripts: single}
	lims := []*Limiter{newNode(t, url, cfg).lim, newNode(t, url, cfg).lim, newNode(t, url, cfg).lim}
	const clients, workers, perWorker = 8, 48, 60 // 360 requests per client
	var mu sync.Mutex
	remaining := make(map[string]map[int]int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				key := fmt.Sprintf("c%d", (w+i)%clients)
				d, err := lims[(w+i)%3].Allow(context.Background(), key)
				if err != nil || d.Local {
					t.Errorf("Allow: %+v %v", d, err)
					return
				}
				if d.Allowed {
					mu.Lock()
					if remaining[key] == nil {
						remaining[key] = map[int]int{}
					}
					remaining[key][d.Remaining]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for c := range clients {
		key := fmt.Sprintf("c%d", c)
		seen := remaining[key]
		if len(seen) != limit {
			t.Errorf("%s: %d distinct accepted, want %d", key, len(seen), limit)
		}
		for r := range limit {
			if seen[r] != 1 {
				t.Errorf("%s: Remaining %d seen %d times", key, r, seen[r])
			}
		}
	}
	var decisions, trips uint64
	for _, l := range lims {
		m := newDTOMetric()
		testenv.Must(t, l.m.batchSize.Write(m), "read batch histogram")
		decisions += uint64(m.Histogram.GetSampleSum())
		trips += m.Histogram.GetSampleCount()
	}
	t.Logf("%d decisions in %d round trips", decisions, trips)
}

// TestFallbackWhenRedisDies: with Redis gone the node limits with its own
// window (starting from what it admitted before), reports Degraded, logs
// once, and goes back to Redis when it returns.
func TestFallbackWhenRedisDies(t *testing.T) {
	srv := testenv.OwnRedis(t)
	const limit = 5
	cfg := Config{Limit: limit, Window: time.Minute, KeyPrefix: "fb:", Timeout: 100 * time.Millisecond, ProbeEvery: 20 * time.Millisecond}
	n := newNode(t, srv.URL, cfg)
	ctx := context.Background()
	allow := func(key string) Decision {
		t.Helper()
		d, err := n.lim.Allow(ctx, key)
		if err != nil {
			t.Fatalf("Allow(%s): %v", key, err)
		}
		return d
	}

	for range 3 {
		if d := allow("a"); !d.Allowed || d.Local {
			t.Fatalf("healthy: %+v", d)
		}
	}
	if n.lim.Degraded() {
		t.Fatal("degraded while healthy")
	}

	srv.Kill()
	// "a" had 3 accepted on this node: 2 more, then refused.
	var got []bool
	for range 4 {
		d := allow("a")
		if !d.Local {
			t.Fatalf("Redis is dead but the decision is not local: %+v", d)
		}
		got = append(got, d.Allowed)
	}
	if fmt.Sprint(got) != "[true true false false]" {
		t.Fatalf("fallback decisions for a: %v, want [true true false false]", got)
	}
	if !n.lim.Degraded() {
		t.Fatal("not degraded with Redis dead")
	}
	// A new client is limited too, not refused outright.
	got = nil
	for range limit + 2 {
		got = append(got, allow("b").Allowed)
	}
	if fmt.Sprint(got) != "[true true true true true false false]" {
		t.Fatalf("fallback decisions for b: %v", got)
	}
	// The middleware answers 429 with headers from the local window.
	n.app.Get("/", nil)
	r := do(t, n.app, "198.51.100.1")
	for range limit {
		r = do(t, n.app, "198.51.100.1")
	}
	if r.status != 429 || r.header[HeaderRetryAfter] != "60" {
		t.Fatalf("fallback middleware: %d %v", r.status, r.header)
	}
	if v := metricValue(t, n.lim.m.fallbackActive); v != 1 {
		t.Fatalf("fallback gauge %v", v)
	}

	// Redis comes back (empty) on the same port.
	back, err := devstack.StartRedis(ctx, srv.Dir, srv.Port())
	testenv.Must(t, err, "restart redis")
	t.Cleanup(back.Stop)
	testenv.WaitFor(t, "recovery", testenv.Patience, func() bool { return !n.lim.Degraded() })

	// Redis never saw "a"'s requests, but the node remembers them.
	if d := allow("a"); d.Allowed || !d.Local {
		t.Fatalf("a right after recovery: %+v, want refused by the local window", d)
	}
	// Others are decided by Redis again.
	if d := allow("c"); !d.Allowed || d.Local {
		t.Fatalf("c after recovery: %+v", d)
	}
	if n.rdb.ZCard(ctx, "fb:c").Val() != 1 {
		t.Fatal("c not recorded in Redis after recovery")
	}

	if c := n.logs.Count("Redis unavailable"); c != 1 {
		t.Errorf("%d 'unavailable' log lines, want 1:\n%s", c, n.logs)
	}
	if c := n.logs.Count("Redis is back"); c != 1 {
		t.Errorf("%d 'back' log lines, want 1:\n%s", c, n.logs)
	}
	if v := metricValue(t, n.lim.m.fallbacks); v != 1 {
		t.Errorf("fallbacks_total %v, want 1", v)
	}
	if v := metricValue(t, n.lim.m.fallbackActive); v != 0 {
		t.Errorf("fallback gauge %v after recovery", v)
	}
	if v := metricValue(t, n.lim.m.limitedLocal); v < 3 {
		t.Errorf("local limited decisions %v", v)
	}
}

// TestFallbackOnHungRedis: a Redis that accepts connections but does not
// answer costs one Timeout, then the node decides locally.
func TestFallbackOnHungRedis(t *testing.T) {
	srv := testenv.OwnRedis(t)
	cfg := Config{Limit: 2, Window: time.Minute, KeyPrefix: "hung:", Timeout: 50 * time.Millisecond, ProbeEvery: 20 * time.Millisecond}
	n := newNode(t, srv.URL, cfg)
	ctx := context.Background()
	if d, _ := n.lim.Allow(ctx, "x"); !d.Allowed || d.Local {
		t.Fatalf("healthy: %+v", d)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	testenv.Must(t, admin.Do(ctx, "CLIENT", "PAUSE", "1500", "ALL").Err(), "client pause")
	d, err := n.lim.Allow(ctx, "x")
	if err != nil || !d.Local || !d.Allowed {
		t.Fatalf("paused Redis: %+v %v, want a local acceptance", d, err)
	}
	if !n.lim.Degraded() {
		t.Fatal("not degraded while Redis hangs")
	}
	if d, _ := n.lim.Allow(ctx, "x"); d.Allowed {
		t.Fatalf("third request allowed while degraded: %+v", d)
	}
	if v := metricValue(t, n.lim.m.errTimeout); v < 1 {
		t.Errorf("timeouts counted %v", v)
	}
	testenv.WaitFor(t, "recovery after the pause", testenv.Patience, func() bool { return !n.lim.Degraded() })
}

// TestScriptReloaded: a Redis that lost its scripts (restart, SCRIPT FLUSH)
// gets the script again within the same decision.
func TestScriptReloaded(t *testing.T) {
	srv := testenv.OwnRedis(t)
	n := newNode(t, srv.URL, Config{Limit: 3, Window: time.Minute, KeyPrefix: "ns:"})
	ctx := context.Background()
	if d, _ := n.lim.Allow(ctx, "k"); !d.Allowed || d.Local {
		t.Fatalf("first: %+v", d)
	}
	testenv.Must(t, n.rdb.ScriptFlush(ctx).Err(), "script flush")
	if d, _ := n.lim.Allow(ctx, "k"); !d.Allowed || d.Local || d.Remaining != 1 {
		t.Fatalf("after flush: %+v", d)
	}
	if n.lim.Degraded() {
		t.Fatal("NOSCRIPT made the limiter degraded")
	}
}

// TestStartsDegradedWithoutRedis: New does not fail when Redis is down.
func TestStartsDegradedWithoutRedis(t *testing.T) {
	port, err := devstack.FreePort()
	testenv.Must(t, err, "free port")
	n := newNode(t, fmt.Sprintf("redis://127.0.0.1:%d/0", port), Config{Limit: 1, Window: time.Minute, ProbeEvery: time.Hour})
	if !n.lim.Degraded() {
		t.Fatal("not degraded without Redis")
	}
	if r := do(t, n.app, "198.51.100.1"); r.status != 200 {
		t.Fatalf("first request %d", r.status)
	}
	if r := do(t, n.app, "198.51.100.1"); r.status != 429 {
		t.Fatalf("second request %d", r.status)
	}
}

func TestCloseIsSafe(t *testing.T) {
	url, prefix := testenv.Redis(t)
	n := newNode(t, url, Config{Limit: 1, Window: time.Minute, KeyPrefix: prefix})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, _ = n.lim.Allow(context.Background(), strconv.Itoa(i))
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	n.lim.Close()
	wg.Wait()
	n.lim.Close() // twice is fine
	if _, err := n.lim.Allow(context.Background(), "z"); err != ErrClosed {
		t.Fatalf("Allow after Close: %v", err)
	}
	// The middleware still limits with the local window.
	if do(t, n.app, "198.51.100.1").status != 200 || do(t, n.app, "198.51.100.1").status != 429 {
		t.Fatal("middleware after Close does not limit")
	}
}

// TestLimitLowered: when the limit shrinks while a client's set holds more
// members, the client waits until enough of them left.
func TestLimitLowered(t *testing.T) {
	url, prefix := testenv.Redis(t)
	ctx := context.Background()
	for _, single := range []bool{false, true} {
		key := fmt.Sprintf("lowered-%v", single)
		wide := newNode(t, url, Config{Limit: 5, Window: time.Minute, KeyPrefix: prefix, SingleKeyScripts: single})
		for range 5 {
			if d, _ := wide.lim.Allow(ctx, key); !d.Allowed {
				t.Fatal("filling refused")
			}
		}
		narrow := newNode(t, url, Config{Limit: 3, Window: time.Minute, KeyPrefix: prefix, SingleKeyScripts: single})
		before := serverTime(t, narrow.rdb)
		// Two requests so that a batch of two goes through the batch script.
		var wg sync.WaitGroup
		ds := make([]Decision, 2)
		for i := range ds {
			wg.Add(1)
			go func() { defer wg.Done(); ds[i], _ = narrow.lim.Allow(ctx, key) }()
		}
		wg.Wait()
		third := narrow.rdb.ZRangeWithScores(ctx, prefix+key, 2, 2).Val()[0]
		for _, d := range ds {
			if d.Allowed || d.Local {
				t.Fatalf("single=%v: %+v, want refused", single, d)
			}
			// The third oldest must leave before 2 remain.
			want := time.Duration(int64(third.Score)+time.Minute.Microseconds()-d.at/1000) * time.Microsecond
			if d.RetryAfter != want || d.at/1000 < before {
				t.Fatalf("single=%v: RetryAfter %s, want %s", single, d.RetryAfter, want)
			}
		}
	}
}

// TestKeyExpiry: a client's key outlives every member still in the window
// (else the count would drop), and goes away within two windows of idling.
func TestKeyExpiry(t *testing.T) {
	url, prefix := testenv.Redis(t)
	const window = 300 * time.Millisecond
	n := newNode(t, url, Config{Limit: 3, Window: window, KeyPrefix: prefix})
	ctx := context.Background()
	key := prefix + "ttl"
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 60 {
		time.Sleep(time.Duration(rng.Int64N(int64(window / 3))))
		if _, err := n.lim.Allow(ctx, "ttl"); err != nil {
			t.Fatal(err)
		}
		newest := n.rdb.ZRangeWithScores(ctx, key, -1, -1).Val()
		pttl := n.rdb.PTTL(ctx, key).Val()
		now := serverTime(t, n.rdb)
		if len(newest) == 0 {
			t.Fatalf("step %d: key gone", i)
		}
		leaves := int64(newest[0].Score) + window.Microseconds() // µs
		if pttl <= 0 || now+pttl.Microseconds() < leaves {
			t.Fatalf("step %d: key expires in %s, before its newest member leaves the window at +%dµs", i, pttl, leaves-now)
		}
		if pttl > 2*window+time.Millisecond {
			t.Fatalf("step %d: TTL %s beyond two windows", i, pttl)
		}
	}
	testenv.WaitFor(t, "idle key to expire", 10*window, func() bool { return n.rdb.Exists(ctx, key).Val() == 0 })
}

// TestForeignKeyType: a key holding another type is decided locally, and
// does not spoil the decisions batched with it.
func TestForeignKeyType(t *testing.T) {
	url, prefix := testenv.Redis(t)
	ctx := context.Background()
	for _, single := range []bool{false, true} {
		n := newNode(t, url, Config{Limit: 2, Window: time.Minute, KeyPrefix: prefix, SingleKeyScripts: single})
		testenv.Must(t, n.rdb.Set(ctx, prefix+"bad", "x", time.Minute).Err(), "set")
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("good-%v-%d", single, i)
				if i%2 == 0 {
					key = "bad"
				}
				d, err := n.lim.Allow(ctx, key)
				if err != nil || d.Local != (key == "bad") {
					t.Errorf("single=%v %s: %+v %v", single, key, d, err)
				}
			}()
		}
		wg.Wait()
		if n.lim.Degraded() {
			t.Errorf("single=%v: one bad key made the limiter degraded", single)
		}
	}
}

// replyOf builds a script reply from "a;b;c": elements that are whole
// numbers of at most 3 digits become integers, the rest strings.
func replyOf(s string) []any {
	var out []any
	for _, e := range strings.Split(s, ";") {
		if n, err := strconv.ParseInt(e, 10, 64); err == nil && len(e) <= 3 {
			out = append(out, n)
		} else {
			out = append(out, e)
		}
	}
	return out
}

func TestAnswerReplyRejectsMalformedReplies(t *testing.T) {
	l := &Limiter{cfg: Config{Limit: 3, Window: time.Second}, local: newLocalWindow(3, time.Second, time.Now), m: mustMetrics(t), log: slog.New(slog.DiscardHandler)}
	mk := func(n int) []*pending {
		ps := make([]*pending, n)
		for i := range ps {
			ps[i] = &pending{done: make(chan struct{}, 1)}
		}
		return ps
	}
	const now = "1700000000000000"
	bad := []struct {
		n     int
		reply string
	}{
		{1, ""}, {1, now}, {1, now + ";1;2"}, {1, now + ";1;2;" + now + ";1"}, {2, now + ";1;2;" + now},
		{1, "x;1;2;" + now}, {1, "170000000000000;1;2;" + now}, {1, now + ";1;2;17000000000000x"},
		{1, now + ";2;2;" + now}, {1, now + ";1;x;" + now}, {1, now + ";-5;2;" + now},
	}
	for _, b := range bad {
		ps := mk(b.n)
		if err := l.answerReply(ps, replyOf(b.reply)); err == nil {
			t.Errorf("answerReply(%d, %q) accepted", b.n, b.reply)
		}
		for _, p := range ps {
			if len(p.done) != 0 {
				t.Errorf("answerReply(%d, %q) answered someone before failing", b.n, b.reply)
			}
		}
	}
	ps := mk(3)
	if err := l.answerReply(ps, replyOf(now+";1;2;1699999999995000;0;0;1699999999000077;-1;0;")); err != nil {
		t.Fatal(err)
	}
	if d := ps[0].res; !d.Allowed || d.Remaining != 2 || d.Reset != 995*time.Millisecond || d.at != 1700000000000000000 {
		t.Errorf("first: %+v", d)
	}
	if d := ps[1].res; d.Allowed || d.RetryAfter != 77*time.Microsecond {
		t.Errorf("second: %+v", d)
	}
	if ps[2].err != errKeyFailed {
		t.Errorf("third: err %v", ps[2].err)
	}
}

func TestErrorClasses(t *testing.T) {
	tests := []struct {
		err         error
		unavailable bool
		crossSlot   bool
	}{
		{context.DeadlineExceeded, true, false},
		{errTimeout, true, false},
		{fmt.Errorf("dial tcp: connection refused"), true, false},
		{redisErr("LOADING Redis is loading the dataset in memory"), true, false},
		{redisErr("READONLY You can't write against a read only replica."), true, false},
		{redisErr("OOM command not allowed when used memory > 'maxmemory'."), true, false},
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false, false},
		{redisErr("CROSSSLOT Keys in request don't hash to the same slot"), false, true},
		{redisErr("ERR Script attempted to access a non local key in a cluster node"), false, true},
	}
	for _, tt := range tests {
		if got := unavailable(tt.err); got != tt.unavailable {
			t.Errorf("unavailable(%v) = %v", tt.err, got)
		}
		if got := crossSlot(tt.err); got != tt.crossSlot {
			t.Errorf("crossSlot(%v) = %v", tt.err, got)
		}
	}
}

// redisErr is an error as the server sends it.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

func TestAllowHonoursContext(t *testing.T) {
	url, prefix := testenv.Redis(t)
	n := newNode(t, url, Config{Limit: 1, Window: time.Minute, KeyPrefix: prefix})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Either the decision arrived first or the cancellation is reported.
	if _, err := n.lim.Allow(ctx, "k"); err != nil && ctx.Err() == nil {
		t.Fatalf("unexpected error %v", err)
	}
	_ = netip.Addr{}
}

func mustMetrics(tb testing.TB) *metrics {
	return newMetrics(nil)
}

// FuzzAnswerReply: whatever Redis replies, answerReply answers every
// decision or none, and never panics.
func FuzzAnswerReply(f *testing.F) {
	for _, s := range []string{"1700000000000000;1;2;1700000000000000", "1700000000000000;1;2;1700000000000000;-1;0;", ";", "e;e", "1700000000000000;0;0;0000000000000000"} {
		f.Add(s, uint8(1))
		f.Add(s, uint8(2))
	}
	l := &Limiter{cfg: Config{Limit: 3, Window: time.Second}, local: newLocalWindow(3, time.Second, time.Now), m: mustMetrics(f), log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, reply string, n uint8) {
		ps := make([]*pending, 1+int(n)%8)
		for i := range ps {
			ps[i] = &pending{done: make(chan struct{}, 1)}
		}
		err := l.answerReply(ps, replyOf(reply))
		for i, p := range ps {
			if answered := len(p.done) == 1; answered != (err == nil) {
				t.Fatalf("reply %q: err %v but decision %d answered=%v", reply, err, i, answered)
			}
		}
	})
}
