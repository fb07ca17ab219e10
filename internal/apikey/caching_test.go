package apikey_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/redis/go-redis/v9"
)

func TestRevocationReachesOtherNodesWithin5s(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	a := startNode(t, env, nodeOpt{})
	b := startNode(t, env, nodeOpt{})
	deaf := startNode(t, env, nodeOpt{noRedis: true}) // misses the announcement: the TTL bounds it
	admin := newKey(t, a.svc, "acme", "admin")
	victim := newKey(t, a.svc, "acme", "victim")
	for _, n := range []*keyNode{a, b, deaf} {
		// Warm every node's cache with the victim key.
		if r := n.Do(t, http.MethodGet, "/keys", nil, withKey(victim.Secret)); r.Status != 200 {
			t.Fatalf("victim key refused before revocation: %d %s", r.Status, r.Body)
		}
	}
	start := time.Now()
	if r := a.Do(t, http.MethodDelete, "/keys/"+victim.Key.Prefix, nil, withKey(admin.Secret)); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if r := a.Do(t, http.MethodGet, "/keys", nil, withKey(victim.Secret)); r.Status != 401 {
		t.Fatalf("node A still accepts the key it revoked: %d", r.Status)
	}
	for name, n := range map[string]*keyNode{"B (subscribed)": b, "C (no Redis)": deaf} {
		deadline := start.Add(5 * time.Second)
		// The bound is checked in the condition: the wait's own limit only
		// stops a request that never comes back from polling forever.
		testenv.WaitFor(t, "node "+name+" to refuse the revoked key", time.Until(deadline)+time.Minute, func() bool {
			issued := time.Now()
			r := n.Do(t, http.MethodGet, "/keys", nil, withKey(victim.Secret))
			if r.Status == 401 {
				t.Logf("node %s refuses the revoked key after %s", name, issued.Sub(start).Round(time.Millisecond))
				return true
			}
			// Only a request sent after the bound counts against it (a slow
			// machine may answer an earlier request late).
			if issued.After(deadline) {
				t.Fatalf("node %s accepted the key in a request sent %s after revocation", name, issued.Sub(start))
			}
			return false
		})
	}
	// The admin key is unaffected everywhere.
	for _, n := range []*keyNode{a, b, deaf} {
		if r := n.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)); r.Status != 200 {
			t.Errorf("admin key refused: %d", r.Status)
		}
	}
}

func TestConcurrentChecksAndRevocations(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	keys := make([]apikey.Created, 8)
	for i := range keys {
		keys[i] = newKey(t, kn.svc, "acme", "")
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				k := keys[(w+i)%len(keys)]
				if _, _, err := kn.svc.Authenticate(ctx, k.Secret); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	for i := 0; i < len(keys); i += 2 {
		if _, err := kn.svc.Revoke(ctx, keys[i].Key.Prefix, 0); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for i, k := range keys {
		_, reason, err := kn.svc.Authenticate(ctx, k.Secret)
		want := "ok"
		if i%2 == 0 {
			want = "revoked"
		}
		if err != nil || reason != want {
			t.Errorf("key %d: %s %v, want %s", i, reason, err, want)
		}
	}
	if _, err := kn.svc.Revoke(ctx, "zzzzzzzz", 0); err != store.ErrNotFound {
		t.Errorf("revoke unknown: %v", err)
	}
}

func TestDatabaseOutageIs503NotUnauthorized(t *testing.T) {
	t.Parallel()
	pg := testenv.OwnPostgres(t)
	url, prefix := testenv.Redis(t)
	env := apptest.NewEnvOn(t, testenv.DatabaseOn(t, pg.URL), url, prefix, apptest.Options{})
	// The key service's clock stands still unless the test moves it: "within
	// the TTL" below must not depend on how long stopping Postgres takes on a
	// loaded machine.
	clock := &manualClock{now: time.Now()}
	kn := startNode(t, env, nodeOpt{now: clock.Now})
	cached := newKey(t, kn.svc, "acme", "")
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(cached.Secret)); r.Status != 200 {
		t.Fatalf("before the outage: %d", r.Status)
	}
	pg.Stop()
	// A key this node has not looked up yet cannot be checked: 503, not 401.
	other := mustGenerate(t)
	start := time.Now()
	_, _, err := kn.svc.Authenticate(context.Background(), other)
	if err == nil || !store.IsUnavailable(err) {
		t.Fatalf("lookup during the outage: %v", err)
	}
	if r := kn.Do(t, http.MethodGet, "/test/seam", nil, withKey(other)); r.Status != 503 || r.ErrorCode() != "UNAVAILABLE" {
		t.Fatalf("unknown key during the outage: %d %s", r.Status, r.Body)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the outage answer took %s", el)
	}
	// A key looked up within the TTL is still accepted by its check
	// (the route itself then needs the database).
	clock.Advance(kn.svc.CacheTTL() - time.Millisecond)
	if p, reason, err := kn.svc.Authenticate(context.Background(), cached.Secret); err != nil || reason != "ok" || p.AccountName != "acme" {
		t.Errorf("cached key during the outage: %s %v", reason, err)
	}
	// Past the TTL the lookup is not trusted any more: the check needs the
	// database, and says it is unavailable.
	clock.Advance(time.Millisecond)
	if _, _, err := kn.svc.Authenticate(context.Background(), cached.Secret); err == nil || !store.IsUnavailable(err) {
		t.Errorf("cached key past its TTL during the outage: %v, want unavailable", err)
	}
}

// heldRedis is a Redis client whose subscriptions can be held: while held,
// what the server sends on a connection that subscribed waits unread (the
// server and every other connection carry on). It orders a node's hearing
// of an announcement after something else, on a real server.
type heldRedis struct {
	*redis.Client
	mu   sync.Mutex
	gate chan struct{} // open (closed channel) unless held
}

func newHeldRedis(t *testing.T, url string) *heldRedis {
	t.Helper()
	opt, err := redis.ParseURL(url)
	testenv.Must(t, err, "parse redis url")
	h := &heldRedis{gate: make(chan struct{})}
	close(h.gate)
	opt.MaxRetries = 0
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &holdableConn{Conn: c, h: h}, nil
	}
	h.Client = redis.NewClient(opt)
	t.Cleanup(func() { h.release(); h.Client.Close() })
	return h
}

// hold stops delivery to subscribed connections until release.
func (h *heldRedis) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
		h.gate = make(chan struct{})
	default:
	}
}

func (h *heldRedis) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.gate:
	default:
		close(h.gate)
	}
}

func (h *heldRedis) wait() {
	h.mu.Lock()
	g := h.gate
	h.mu.Unlock()
	<-g
}

type holdableConn struct {
	net.Conn
	h          *heldRedis
	subscriber atomic.Bool
}

func (c *holdableConn) Write(p []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(p), []byte("subscribe")) {
		c.subscriber.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *holdableConn) Read(p []byte) (int, error) {
	if c.subscriber.Load() {
		c.h.wait()
	}
	return c.Conn.Read(p)
}

// invalidationsHeard is how many announcements of other services the node
// acted on.
func invalidationsHeard(kn *keyNode) float64 {
	mfs, err := kn.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == "attestd_apikey_invalidations_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestOwnAnnouncementKeepsLookups: a node that creates a key announces it
// to the others; when its own announcement comes back over the
// subscription after it already looked the key up, the lookup stays cached
// (it read the committed key). Dropping it cost a database read per new key
// and, during a database outage, refused a key checked moments before.
func TestOwnAnnouncementKeepsLookups(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	rdb := newHeldRedis(t, env.RedisURL)
	kn := startNode(t, env, nodeOpt{redis: rdb.Client})
	ctx := context.Background()

	rdb.hold() // the node's own announcement arrives only after the lookup
	k := newKey(t, kn.svc, "acme", "")
	before := dbLookups(kn)
	if _, reason, err := kn.svc.Authenticate(ctx, k.Secret); err != nil || reason != "ok" {
		t.Fatalf("new key: %s %v", reason, err)
	}
	if got := dbLookups(kn) - before; got != 1 {
		t.Fatalf("first check of a new key made %v database lookups, want 1", got)
	}
	// Another service announces an unrelated prefix after ours; once the
	// node acted on it, it has heard ours too (one channel is delivered in
	// order).
	other := apptest.NewRedis(t, env.RedisURL)
	testenv.Must(t, other.Publish(ctx, env.Prefix+apikey.ChannelSuffix, "zzzzzzzz/another-node").Err(), "publish")
	rdb.release()
	testenv.WaitFor(t, "the node to hear the announcements", 10*time.Second, func() bool { return invalidationsHeard(kn) >= 1 })
	if _, reason, err := kn.svc.Authenticate(ctx, k.Secret); err != nil || reason != "ok" {
		t.Fatalf("new key, second check: %s %v", reason, err)
	}
	if got := dbLookups(kn) - before; got != 1 {
		t.Errorf("the node's own announcement dropped its lookup: %v database lookups in all, want 1", got)
	}
}
