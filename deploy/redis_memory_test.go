package deploy_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/cache"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook/queue"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"
)

// shippedPolicies reads the two Redis services' memory policies from
// deploy/compose.yaml: what the test runs is what is shipped.
func shippedPolicies(t *testing.T) (state, cacheArgs []string) {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	testenv.Must(t, err, "read compose.yaml")
	var c struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	testenv.Must(t, yaml.Unmarshal(b, &c), "parse compose.yaml")
	policy := func(name string) []string {
		cmd := c.Services[name].Command
		i := slices.Index(cmd, "--maxmemory-policy")
		if i < 0 || i+1 >= len(cmd) {
			t.Fatalf("compose %s sets no maxmemory-policy: %v", name, cmd)
		}
		return []string{"--maxmemory-policy", cmd[i+1]}
	}
	return policy("redis"), policy("redis-cache")
}

// TestFullCacheEvictsOnlyCacheEntries fills the read cache far past its
// Redis's maxmemory, as answers of every kind do (immutable, per epoch,
// fixed TTL), with the shipped policies (deploy/compose.yaml) on two
// real redis-servers (the memory scaled down): the cache's server evicts
// its own entries and keeps serving, and the state's server loses
// nothing: rate-limit windows, webhook queues, sessions and payment
// claims, all of which carry TTLs, are all there. The same fill into one
// server under the cache's policy does lose them: the reason for two.
func TestFullCacheEvictsOnlyCacheEntries(t *testing.T) {
	stateArgs, cacheArgs := shippedPolicies(t)
	if !slices.Equal(stateArgs[1:], []string{"noeviction"}) || !slices.Equal(cacheArgs[1:], []string{"volatile-lru"}) {
		t.Fatalf("shipped policies: state %v, cache %v", stateArgs, cacheArgs)
	}
	ctx := context.Background()
	start := func(name string, args []string) *redis.Client {
		r, err := devstack.StartRedisWith(ctx, testenv.TempDir(t, "attestd-"+name+"-"), 0, append([]string{"--maxmemory", "4mb"}, args...)...)
		testenv.Must(t, err, "start %s redis", name)
		t.Cleanup(r.Stop)
		return apptest.NewRedis(t, r.URL)
	}

	t.Run("two servers", func(t *testing.T) {
		state, cacheRdb := start("state", stateArgs), start("cache", cacheArgs)
		keys := writeState(t, state)
		evicted := fillCache(t, cacheRdb)
		if evicted == 0 {
			t.Fatal("the cache's server evicted nothing: the fill did not pass its maxmemory")
		}
		if lost := lostState(t, state, keys); len(lost) > 0 {
			t.Fatalf("the state's server lost %d keys to a full cache: %v", len(lost), lost)
		}
		used, _ := memory(t, cacheRdb)
		t.Logf("cache server: %d keys evicted, %d bytes used at the end; the state's %d keys all kept", evicted, used, len(keys))
	})

	t.Run("one server (the control)", func(t *testing.T) {
		one := start("shared", cacheArgs)
		keys := writeState(t, one)
		fillCache(t, one)
		if lost := lostState(t, one, keys); len(lost) == 0 {
			t.Fatal("one server under volatile-lru kept every state key through the fill: the test above proves nothing")
		}
	})
}

// writeState makes state as the features do, through their own code where
// it is cheap: the rate limiter's windows (real middleware, 50 clients),
// the webhook queue (real streams and retry sets), and keys with TTLs as
// sessions and x402 payment claims are written. It returns every key.
func writeState(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	ctx := context.Background()
	lim, err := ratelimit.New(rdb, ratelimit.Config{Limit: 100, Window: time.Minute, KeyPrefix: "st:rl:",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}, ProxyHeader: "X-Real-IP"}, nil, apptest.Logger())
	testenv.Must(t, err, "limiter")
	defer lim.Close()
	// The limiter takes the client from X-Real-IP when the peer is trusted.
	app := fiber.New()
	app.Use(lim.Middleware())
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("ok") })
	for i := range 50 {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Real-IP", fmt.Sprintf("198.51.100.%d", i+1))
		res, err := app.Test(req, -1)
		testenv.Must(t, err, "limited request")
		res.Body.Close()
	}
	q := queue.New(rdb, "st:", 2)
	_, err = q.EnsureGroups(ctx)
	testenv.Must(t, err, "queue groups")
	testenv.Must(t, q.Publish(ctx, []queue.Event{{ID: 1, Type: "attestation.created", Created: time.Now().UnixMilli(), Body: `{"x":1}`}}), "publish")
	for i := range 20 {
		testenv.Must(t, rdb.Set(ctx, fmt.Sprintf("st:web:session:%d", i), strings.Repeat("s", 200), time.Hour).Err(), "session")
		testenv.Must(t, rdb.SetNX(ctx, fmt.Sprintf("st:x402:claim:%d", i), "owner", 10*time.Minute).Err(), "claim")
	}
	keys, err := rdb.Keys(ctx, "st:*").Result()
	testenv.Must(t, err, "keys")
	if len(keys) < 90 {
		t.Fatalf("only %d state keys written: %v", len(keys), keys)
	}
	return keys
}

// fillCache writes about 12 MB of answers through the cache (three times
// its server's maxmemory): full tiles (immutable), proofs and right edges
// (fixed TTL), list pages (per epoch). It returns the keys evicted.
func fillCache(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	ctx := context.Background()
	// A server of its own: no budget (ATTESTD_CACHE_MAX_MB=0), its policy
	// decides. Each answer is asked twice (admission stores the second).
	c, err := cache.New(ctx, rdb, cache.Options{Prefix: "c:", LocalBytes: -1, MaxBytes: -1, Logger: apptest.Logger(), RedisTimeout: time.Second})
	testenv.Must(t, err, "cache")
	defer c.Close()
	val := make([]byte, 64<<10)
	for i := range 192 {
		_, _ = rand.Read(val) // incompressible: no gzip form shrinks it
		load := func(context.Context) ([]byte, bool, error) { return append([]byte(nil), val...), i%3 == 0, nil }
		for range 2 {
			var err error
			if i%2 == 0 {
				_, _, err = c.GetValue(ctx, cache.NewKey("fill").Int(int64(i)).Key(), load)
			} else {
				_, _, err = c.GetValueFor(ctx, cache.NewKey("fillttl").Int(int64(i)).Key(), time.Minute, load)
			}
			testenv.Must(t, err, "cache value %d", i)
		}
	}
	if c.Degraded() {
		t.Fatal("the cache saw Redis errors while filling: a full cache server must evict, not refuse")
	}
	_, evicted := memory(t, rdb)
	return evicted
}

func lostState(t *testing.T, rdb *redis.Client, keys []string) []string {
	t.Helper()
	var lost []string
	for _, k := range keys {
		n, err := rdb.Exists(context.Background(), k).Result()
		testenv.Must(t, err, "exists %s", k)
		if n == 0 {
			lost = append(lost, k)
		}
	}
	return lost
}

// memory reads a server's used memory and evicted keys.
func memory(t *testing.T, rdb *redis.Client) (used, evicted int64) {
	t.Helper()
	for _, section := range []string{"memory", "stats"} {
		info, err := rdb.Info(context.Background(), section).Result()
		testenv.Must(t, err, "info")
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				fmt.Sscan(v, &used)
			}
			if v, ok := strings.CutPrefix(line, "evicted_keys:"); ok {
				fmt.Sscan(v, &evicted)
			}
		}
	}
	return used, evicted
}
