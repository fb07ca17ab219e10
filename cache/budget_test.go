package cache

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// big is an incompressible value of n bytes (its gzip form does not
// shrink it, so what is stored is about n).
func big(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	testenv.Must(t, err, "random")
	return b
}

// cacheBytes sums the memory Redis reports for the cache's entries and
// markers under prefix (not its budget counters or the epoch).
func cacheBytes(t *testing.T, rdb *redis.Client, prefix string) (entries, markers int64) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasPrefix(k, prefix+"budget:") || k == prefix+"epoch" {
			continue
		}
		n, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil {
			continue // expired meanwhile
		}
		if strings.HasPrefix(k, prefix+"seen:") {
			markers += n
		} else {
			entries += n
		}
	}
	testenv.Must(t, iter.Err(), "scan")
	return entries, markers
}

// TestAdmissionStoresAtTheSecondMiss: a large entry is kept in Redis when
// a second miss asks for it (another node, or the same after its memory
// forgot), never at the first; a small one at the first.
func TestAdmissionStoresAtTheSecondMiss(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	nodes := make([]*Cache, 3)
	for i := range nodes {
		nodes[i] = newCache(t, url, prefix, Options{LocalBytes: -1})
	}
	val := big(t, 4096)
	for _, tc := range []struct {
		name  string
		get   func(c *Cache, key string, load Loader) (Source, error)
		value []byte
		want  []Source // what each node's first read comes from
	}{
		{"large, per epoch", func(c *Cache, k string, l Loader) (Source, error) {
			_, s, err := c.GetValue(context.Background(), k, l)
			return s, err
		},
			val, []Source{FromLoader, FromLoader, FromRedis}},
		{"large, for a time", func(c *Cache, k string, l Loader) (Source, error) {
			_, s, err := c.GetValueFor(context.Background(), k, time.Minute, l)
			return s, err
		}, val, []Source{FromLoader, FromLoader, FromRedis}},
		{"small", func(c *Cache, k string, l Loader) (Source, error) {
			_, s, err := c.GetValue(context.Background(), k, l)
			return s, err
		},
			[]byte(`{"small":true}`), []Source{FromLoader, FromRedis, FromRedis}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			load := func(context.Context) ([]byte, bool, error) { return tc.value, true, nil }
			for i, c := range nodes {
				src, err := tc.get(c, "adm:"+tc.name, load)
				testenv.Must(t, err, "node %d", i)
				if src != tc.want[i] {
					t.Errorf("node %d read from %v, want %v", i, src, tc.want[i])
				}
			}
		})
	}
}

// TestBudgetBoundsWhatRedisHolds: distinct entries, each asked twice so
// admission lets them in, stop being stored once their class's share of
// the budget is spent; what Redis holds for the cache stays within the
// budget (measured by Redis); the cache says it is full, keeps answering,
// and is not "down". Its counters are shared: a second node sees the
// budget the first spent.
func TestBudgetBoundsWhatRedisHolds(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	const budgetBytes = 256 << 10 // short class: 64 KiB; long: 192 KiB
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := newCache(t, url, prefix, Options{LocalBytes: -1, MaxBytes: budgetBytes, Registerer: regA})
	b := newCache(t, url, prefix, Options{LocalBytes: -1, MaxBytes: budgetBytes, Registerer: regB})
	rdb := a.rdb.(*redis.Client)
	for _, tc := range []struct {
		name      string
		immutable bool
		share     int64
	}{{"short", false, budgetBytes / 4}, {"long", true, budgetBytes * 3 / 4}} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := cacheBytes(t, rdb, prefix)
			val := big(t, 8<<10)
			loads := 0
			load := func(context.Context) ([]byte, bool, error) { loads++; return val, tc.immutable, nil }
			// Five times the share, each entry asked by both nodes.
			n := int(5 * tc.share / int64(len(val)))
			for i := range n {
				k := fmt.Sprintf("%s:%d", tc.name, i)
				for _, c := range []*Cache{a, b} {
					v, _, err := c.GetValue(context.Background(), k, load)
					if err != nil || len(v.JSON) != len(val) {
						t.Fatalf("read %s: %v (%d bytes)", k, err, len(v.JSON))
					}
				}
			}
			entries, markers := cacheBytes(t, rdb, prefix)
			held := entries + markers - before
			t.Logf("%s: %d entries of %d bytes offered twice; Redis holds %d bytes for them (share %d), %d loads",
				tc.name, n, len(val), held, tc.share, loads)
			if held > tc.share+tc.share/20 { // Redis's own per-key bytes are estimated
				t.Errorf("Redis holds %d bytes of %s entries, share %d", held, tc.name, tc.share)
			}
			if entries-before < tc.share/2 {
				t.Errorf("only %d bytes stored: the budget refused before it was spent", entries-before)
			}
			// b stored (a's misses came first: markers) and so refused;
			// a hears of it at its next read of the counters.
			testenv.WaitForState(t, "both nodes say full", testenv.Patience, func() (bool, string) {
				return a.budget.isFull(classOf(tc.immutable)) && b.budget.isFull(classOf(tc.immutable)),
					fmt.Sprintf("a %v, b %v", a.Full(), b.Full())
			})
			// The gauge says so on both nodes, read now: a class is full
			// until its window ends (10 s for the short one), which a
			// loaded machine may reach before the other class is done.
			for _, reg := range []*prometheus.Registry{regA, regB} {
				if v := testenv.MetricSum(t, reg, "attestd_cache_full", "class", tc.name); v != 1 {
					t.Errorf("attestd_cache_full{class=%q} is %v, want 1", tc.name, v)
				}
			}
			if a.Degraded() || b.Degraded() {
				t.Error("a full budget marked the cache down")
			}
		})
	}
	for _, o := range []string{"stored", "deferred", "refused"} {
		if v := testenv.MetricSum(t, regA, "attestd_cache_redis_writes_total", "outcome", o) +
			testenv.MetricSum(t, regB, "attestd_cache_redis_writes_total", "outcome", o); v == 0 {
			t.Errorf("no write counted %s", o)
		}
	}
}

func classOf(immutable bool) class {
	if immutable {
		return classLong
	}
	return classShort
}

// TestBudgetRollsWithItsWindows: a full class takes writes again once the
// windows whose entries filled it have passed (their entries expired).
func TestBudgetRollsWithItsWindows(t *testing.T) {
	t.Parallel()
	url, prefix := testenv.Redis(t)
	c := newCache(t, url, prefix, Options{LocalBytes: -1, MaxBytes: 64 << 10, IndexedTTL: 3 * time.Second})
	now := time.Now()
	c.budget.now = func() time.Time { return now }
	fill := func(round int) int {
		stored := 0
		for i := range 40 {
			val := big(t, 2048)
			k := fmt.Sprintf("roll:%d:%d", round, i)
			load := func(context.Context) ([]byte, bool, error) { return val, false, nil }
			c.GetValue(context.Background(), k, load)
			c.GetValue(context.Background(), k, load)
			if n, _ := c.rdb.Exists(context.Background(), c.indexedKey(k, c.Epoch())).Result(); n == 1 {
				stored++
			}
		}
		return stored
	}
	first := fill(0)
	if !c.Full() || first == 0 {
		t.Fatalf("first fill stored %d, full %v", first, c.Full())
	}
	// Three windows of 1 s later (the TTL), and the counters' next read:
	// the first window's entries are gone, and so is their charge.
	now = now.Add(4 * time.Second)
	testenv.Must(t, c.budget.refresh(context.Background()), "refresh")
	if c.Full() {
		t.Fatal("still full in a later window")
	}
	if again := fill(1); again == 0 {
		t.Fatal("nothing stored after the windows passed")
	}
}

// TestOutOfMemoryIsFullNotDown: a Redis whose state took its memory
// (noeviction) refuses the cache's writes; the cache stops writing and
// says full, keeps reading from Redis and answering, and is not marked
// down (the node's /health stays ok).
func TestOutOfMemoryIsFullNotDown(t *testing.T) {
	t.Parallel()
	r, err := devstack.StartRedisWith(context.Background(), testenv.TempDir(t, "attestd-oom-"), 0,
		"--maxmemory-policy", "noeviction")
	testenv.Must(t, err, "redis")
	t.Cleanup(r.Stop)
	c := newCache(t, r.URL, "oom:", Options{LocalBytes: -1, MaxBytes: -1})
	small := func(context.Context) ([]byte, bool, error) { return []byte(`{"kept":1}`), true, nil }
	c.GetValue(context.Background(), "before", small)
	rdb := c.rdb.(*redis.Client)
	// State grew past the server's room: set maxmemory under what it
	// uses, so every write is refused whatever its size.
	info, err := rdb.InfoMap(context.Background(), "memory").Result()
	testenv.Must(t, err, "info")
	var used int64
	fmt.Sscan(info["Memory"]["used_memory"], &used)
	testenv.Must(t, rdb.ConfigSet(context.Background(), "maxmemory", fmt.Sprint(used/2)).Err(), "maxmemory")
	if err := rdb.Set(context.Background(), "state", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		t.Fatalf("a state write with the server full: %v, want OOM", err)
	}
	v, _, err := c.GetValue(context.Background(), "after", small)
	if err != nil || string(v.JSON) != `{"kept":1}` {
		t.Fatalf("read with Redis full: %q %v", v.JSON, err)
	}
	if !c.Full() || c.Degraded() {
		t.Fatalf("full %v, degraded %v: want full and not degraded", c.Full(), c.Degraded())
	}
	if _, src, _ := c.GetValue(context.Background(), "before", small); src != FromRedis {
		t.Errorf("an entry stored before: read from %v, want Redis (still read)", src)
	}
}

func TestAllocated(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 0}, {1, 16}, {16, 16}, {17, 32}, {128, 128}, {129, 160}, {160, 160}, {161, 192},
		{4096, 4096}, {4097, 5120}, {8192, 8192}, {8193, 10240}, {16400, 20480},
	} {
		if got := allocated(tc.n); got != int64(tc.want) {
			t.Errorf("allocated(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
