package apikey_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/internal/apierror"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { apptest.Main(m) }

// keyNode is an API node with the key routes, and its key service.
type keyNode struct {
	*apptest.Node
	svc *apikey.Service
	reg *prometheus.Registry
}

type nodeOpt struct {
	noRedis   bool          // the node never hears announcements: TTL only
	redis     *redis.Client // the node's Redis client (default: a fresh one)
	maxActive int
	touch     time.Duration
	onMissing fiber.Handler
	now       func() time.Time // the key service's clock (default time.Now)
}

// manualClock is a clock that moves only when told to.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startNode(t *testing.T, env *apptest.Env, o nodeOpt) *keyNode {
	t.Helper()
	var deps app.Deps
	kn := &keyNode{reg: prometheus.NewRegistry()}
	kn.Node = env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			opt := apikey.Deps{Config: apikey.Config{MaxActiveKeys: o.maxActive, TouchInterval: o.touch},
				Store: deps.Store, Channel: env.Prefix + apikey.ChannelSuffix, Registerer: kn.reg, Logger: deps.Logger, Now: o.now}
			switch {
			case o.redis != nil:
				opt.Redis = o.redis
			case !o.noRedis:
				opt.Redis = apptest.NewRedis(t, env.RedisURL)
			}
			svc, err := apikey.New(context.Background(), opt)
			testenv.Must(t, err, "key service")
			kn.svc = svc
			svc.Routes(api)
			api.Route(http.MethodGet, "/test/seam", svc.Require(apikey.RequireOptions{OnMissingKey: o.onMissing}),
				func(c *fiber.Ctx) error { return c.SendString("route ran") })
		},
	})
	t.Cleanup(kn.svc.Close)
	// The first subscription drops every cached lookup (announcements made
	// before it were not heard); tests that count lookups or rely on a
	// cached one start after it.
	select {
	case <-kn.svc.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("key service not subscribed to revocations within 10 s")
	}
	return kn
}

// newKey makes a key for the account, as `attestd keys create` does.
func newKey(t *testing.T, svc *apikey.Service, account, label string) apikey.Created {
	t.Helper()
	acc, _, err := svc.Store().EnsureAccount(context.Background(), account)
	testenv.Must(t, err, "account")
	k, err := svc.Create(context.Background(), acc.ID, label)
	testenv.Must(t, err, "create key")
	return k
}

// seam calls the node's test route behind Require with key (it is not part
// of the contract, so it is not checked against openapi.yaml).
func seam(t *testing.T, kn *keyNode, key string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, httpapi.Prefix+"/test/seam", nil)
	req.Header.Set("x-api-key", key)
	res, err := kn.Fiber().Test(req, 5000)
	testenv.Must(t, err, "request")
	res.Body.Close()
	return res.StatusCode
}

func withKey(key string) map[string]string { return map[string]string{"x-api-key": key} }

// dbLookups is how many key lookups reached the database.
func dbLookups(kn *keyNode) float64 {
	mfs, err := kn.reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != "attestd_apikey_lookups_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" && l.GetValue() == "database" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

type keyList struct {
	Data []struct {
		Prefix     string  `json:"prefix"`
		Account    string  `json:"account"`
		Label      string  `json:"label"`
		Role       string  `json:"role"`
		Revoked    bool    `json:"revoked"`
		LastUsedAt *string `json:"lastUsedAt"`
	} `json:"data"`
	Pagination struct {
		Limit, Offset int
		Total         int64
	} `json:"pagination"`
}

func TestKeyChecks(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	good := newKey(t, kn.svc, "acme", "ci")
	revoked := newKey(t, kn.svc, "acme", "old")
	if _, err := kn.svc.Revoke(context.Background(), revoked.Key.Prefix, 0); err != nil {
		t.Fatal(err)
	}
	unknown, _ := apikey.Generate()
	// Same prefix as a real key, different secret.
	forged := good.Secret[:len(good.Secret)-1] + map[bool]string{true: "2", false: "3"}[strings.HasSuffix(good.Secret, "3")]

	// Every entry must be malformed whatever the random secret is: a secret
	// is 48 or 49 characters long, so one more base58 character can still
	// be a well-formed key (good.Secret+"x" was, in one CI run); two more
	// never are, and 44 'z's decode to 33 bytes.
	malformed := []string{"atst_", "atst_0000", "Bearer " + good.Secret, strings.ToUpper(good.Secret), good.Secret + "xx",
		"atst_" + strings.Repeat("z", 44), "atst_" + strings.Repeat("z", 45), good.Secret[1:], "' OR 1=1 --"}
	before := dbLookups(kn)
	for _, k := range malformed {
		r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(k))
		if r.Status != 401 || r.ErrorCode() != "UNAUTHORIZED" || !strings.Contains(string(r.Body), "does not hold an API key") {
			t.Errorf("malformed %q: %d %s", k, r.Status, r.Body)
		}
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("malformed %q: no WWW-Authenticate", k)
		}
	}
	if after := dbLookups(kn); after != before {
		t.Errorf("malformed keys made %v database lookups, want none", after-before)
	}

	for _, tc := range []struct {
		name, key, msg string
		status         int
	}{
		{"missing", "", "needs an API key", 401},
		{"unknown", unknown.Secret, "unknown API key", 401},
		{"forged secret, real prefix", forged, "unknown API key", 401},
		{"revoked", revoked.Secret, "revoked", 401},
		{"valid", good.Secret, "", 200},
	} {
		var h map[string]string
		if tc.key != "" {
			h = withKey(tc.key)
		}
		r := kn.Do(t, http.MethodGet, "/keys", nil, h)
		if r.Status != tc.status || (tc.msg != "" && !strings.Contains(string(r.Body), tc.msg)) {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	// Unknown prefixes are cached too: asking again within the TTL costs no
	// lookup. Warm both right before measuring so a slow machine cannot
	// outlast the 4 s TTL inside the loop.
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(unknown.Secret))
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(good.Secret))
	before = dbLookups(kn)
	for i := 0; i < 3; i++ {
		kn.Do(t, http.MethodGet, "/keys", nil, withKey(unknown.Secret))
		kn.Do(t, http.MethodGet, "/keys", nil, withKey(good.Secret))
	}
	if after := dbLookups(kn); after != before {
		t.Errorf("repeated checks made %v database lookups, want 0 (cached)", after-before)
	}
}

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
		for {
			issued := time.Now()
			r := n.Do(t, http.MethodGet, "/keys", nil, withKey(victim.Secret))
			if r.Status == 401 {
				t.Logf("node %s refuses the revoked key after %s", name, issued.Sub(start).Round(time.Millisecond))
				break
			}
			// Only a request sent after the bound counts against it (a slow
			// machine may answer an earlier request late).
			if issued.After(deadline) {
				t.Fatalf("node %s accepted the key in a request sent %s after revocation", name, issued.Sub(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The admin key is unaffected everywhere.
	for _, n := range []*keyNode{a, b, deaf} {
		if r := n.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)); r.Status != 200 {
			t.Errorf("admin key refused: %d", r.Status)
		}
	}
}

func TestAccountsAreIsolated(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	x := newKey(t, kn.svc, "acme", "x1")
	newKey(t, kn.svc, "acme", "x2")
	y := newKey(t, kn.svc, "globex", "y1")

	var xs, ys keyList
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(x.Secret)).JSON(t, &xs)
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(y.Secret)).JSON(t, &ys)
	if len(xs.Data) != 2 || xs.Pagination.Total != 2 || len(ys.Data) != 1 || ys.Pagination.Total != 1 {
		t.Fatalf("acme sees %d (total %d), globex sees %d", len(xs.Data), xs.Pagination.Total, len(ys.Data))
	}
	for _, k := range xs.Data {
		if k.Account != "acme" || k.Prefix == y.Key.Prefix {
			t.Errorf("acme sees %+v", k)
		}
	}
	if strings.Contains(string(kn.Do(t, http.MethodGet, "/keys", nil, withKey(x.Secret)).Body), "atst_") {
		t.Error("a list shows a secret")
	}
	// Acme cannot revoke globex's key: 404, and the key keeps working.
	r := kn.Do(t, http.MethodDelete, "/keys/"+y.Key.Prefix, nil, withKey(x.Secret))
	if r.Status != 404 || r.ErrorCode() != "KEY_NOT_FOUND" {
		t.Fatalf("cross-account revoke: %d %s", r.Status, r.Body)
	}
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(y.Secret)); r.Status != 200 {
		t.Fatalf("globex key broken by acme: %d", r.Status)
	}
	// A key acme creates belongs to acme.
	var created struct {
		Data struct{ Prefix, Account, Key, Label string }
	}
	r = kn.Do(t, http.MethodPost, "/keys", []byte(`{"label":"made by api"}`), withKey(x.Secret))
	r.JSON(t, &created)
	if r.Status != 201 || created.Data.Account != "acme" || created.Data.Label != "made by api" || r.Header.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if status := seam(t, kn, created.Data.Key); status != 200 {
		t.Fatalf("new key refused: %d", status)
	}
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(y.Secret)).JSON(t, &ys)
	if len(ys.Data) != 1 {
		t.Fatalf("globex sees acme's new key: %+v", ys.Data)
	}
	// Revoke own key: 204, twice; malformed prefix: 400; unknown: 404.
	for i := 0; i < 2; i++ {
		if r := kn.Do(t, http.MethodDelete, "/keys/"+created.Data.Prefix, nil, withKey(x.Secret)); r.Status != 204 {
			t.Fatalf("revoke own key (%d): %d %s", i, r.Status, r.Body)
		}
	}
	if r := kn.Do(t, http.MethodDelete, "/keys/abc", nil, withKey(x.Secret)); r.Status != 400 {
		t.Errorf("malformed prefix: %d", r.Status)
	}
	if r := kn.Do(t, http.MethodDelete, "/keys/zzzzzzzz", nil, withKey(x.Secret)); r.Status != 404 {
		t.Errorf("unknown prefix: %d", r.Status)
	}
	if status := seam(t, kn, created.Data.Key); status != 401 {
		t.Errorf("revoked key still works: %d", status)
	}
}

func TestCreateKeyRequests(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{maxActive: 3})
	k := newKey(t, kn.svc, "acme", "")
	h := func(ct string) map[string]string { return map[string]string{"x-api-key": k.Secret, "Content-Type": ct} }
	for _, tc := range []struct {
		name, ct, body string
		status         int
		code           string
	}{
		{"wrong type", "text/plain", `{"label":"a"}`, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"bad json", "application/json", `{"label"`, 400, "INVALID_PARAM"},
		{"unknown field", "application/json", `{"name":"a"}`, 400, "INVALID_PARAM"},
		{"too long label", "application/json", `{"label":"` + strings.Repeat("a", 101) + `"}`, 400, "INVALID_PARAM"},
		{"too large", "application/json", `{"label":"` + strings.Repeat(" ", 5000) + `"}`, 413, "PAYLOAD_TOO_LARGE"},
		{"label", "application/json", `{"label":"one"}`, 201, ""},
		{"no body", "application/json", ``, 201, ""},
		{"over the limit", "application/json", `{"label":"four"}`, 409, "KEY_LIMIT_REACHED"},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		r := kn.Do(t, http.MethodPost, "/keys", body, h(tc.ct))
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	if r := kn.Do(t, http.MethodPost, "/keys?x=1", nil, h("application/json")); r.Status != 400 {
		t.Errorf("unknown query parameter: %d", r.Status)
	}
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	k := newKey(t, kn.svc, "acme", "k0")
	for i := 1; i < 5; i++ {
		newKey(t, kn.svc, "acme", "k"+string(rune('0'+i)))
	}
	var l keyList
	kn.Do(t, http.MethodGet, "/keys?limit=2&offset=1", nil, withKey(k.Secret)).JSON(t, &l)
	if len(l.Data) != 2 || l.Pagination.Total != 5 || l.Pagination.Limit != 2 || l.Pagination.Offset != 1 || l.Data[0].Label != "k3" {
		t.Fatalf("page: %+v", l)
	}
	kn.Do(t, http.MethodGet, "/keys?limit=1000", nil, withKey(k.Secret)).JSON(t, &l)
	if l.Pagination.Limit != 100 || len(l.Data) != 5 {
		t.Fatalf("clamp: %+v", l.Pagination)
	}
	for _, q := range []string{"?limit=0", "?offset=-1", "?limit=x", "?sort=asc"} {
		if r := kn.Do(t, http.MethodGet, "/keys"+q, nil, withKey(k.Secret)); r.Status != 400 {
			t.Errorf("%s: %d", q, r.Status)
		}
	}
}

func TestLastUsedIsWrittenInBatches(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{touch: time.Hour}) // only explicit flushes
	k := newKey(t, kn.svc, "acme", "")
	lastUsed := func() *time.Time {
		var at *time.Time
		err := env.Store.Pool().QueryRow(context.Background(), `SELECT last_used_at FROM api_keys WHERE prefix = $1`, k.Key.Prefix).Scan(&at)
		testenv.Must(t, err, "read last_used_at")
		return at
	}
	for i := 0; i < 20; i++ {
		if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(k.Secret)); r.Status != 200 {
			t.Fatal(r.Status)
		}
	}
	if at := lastUsed(); at != nil {
		t.Fatalf("last_used_at written per request (%v) before any flush", at)
	}
	before := time.Now().Add(-2 * time.Second)
	testenv.Must(t, kn.svc.Flush(context.Background()), "flush")
	at := lastUsed()
	if at == nil || at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("last_used_at after flush: %v", at)
	}
	var l keyList
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(k.Secret)).JSON(t, &l)
	if l.Data[0].LastUsedAt == nil {
		t.Fatal("lastUsedAt not listed")
	}
}

func TestMissingKeySeam(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	paid := func(c *fiber.Ctx) error {
		if c.Get("X-Payment") == "" {
			return c.Status(http.StatusPaymentRequired).JSON(fiber.Map{"error": fiber.Map{"code": "PAYMENT_REQUIRED", "message": "pay"}})
		}
		return c.Next()
	}
	kn := startNode(t, env, nodeOpt{onMissing: paid})
	k := newKey(t, kn.svc, "acme", "")
	do := func(h map[string]string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, httpapi.Prefix+"/test/seam", nil)
		for name, v := range h {
			req.Header.Set(name, v)
		}
		res, err := kn.Fiber().Test(req, 5000)
		testenv.Must(t, err, "request")
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name   string
		h      map[string]string
		status int
	}{
		{"no key, no payment: the seam answers", nil, 402},
		{"no key, payment: the seam runs the route", map[string]string{"X-Payment": "proof"}, 200},
		{"valid key", withKey(k.Secret), 200},
		{"malformed key is not delegated", withKey("atst_nope"), 401},
		{"unknown key is not delegated", map[string]string{"x-api-key": mustGenerate(t), "X-Payment": "proof"}, 401},
	} {
		if status, body := do(tc.h); status != tc.status {
			t.Errorf("%s: %d %s", tc.name, status, body)
		}
	}
}

func mustGenerate(t *testing.T) string {
	k, err := apikey.Generate()
	testenv.Must(t, err, "generate")
	return k.Secret
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
	deadline := time.Now().Add(10 * time.Second)
	for invalidationsHeard(kn) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the node did not hear the announcements within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, reason, err := kn.svc.Authenticate(ctx, k.Secret); err != nil || reason != "ok" {
		t.Fatalf("new key, second check: %s %v", reason, err)
	}
	if got := dbLookups(kn) - before; got != 1 {
		t.Errorf("the node's own announcement dropped its lookup: %v database lookups in all, want 1", got)
	}
}

// TestKeyRoles: admin keys (the CLI's, or made explicitly by an admin key)
// manage the account's keys; read keys (the default of POST /keys) call
// key-protected routes only, get 403 FORBIDDEN on /keys, and can never
// revoke a key of a higher role.
func TestKeyRoles(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{})
	kn := startNode(t, env, nodeOpt{})
	ctx := context.Background()
	admin := newKey(t, kn.svc, "acme", "cli") // as `attestd keys create` makes it
	if admin.Key.Role != "admin" {
		t.Fatalf("a key made as the CLI makes it has role %q, want admin", admin.Key.Role)
	}
	type created struct {
		Data struct{ Prefix, Key, Role string }
	}
	create := func(key, body string) (*apptest.Response, created) {
		var c created
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := kn.Do(t, http.MethodPost, "/keys", b, map[string]string{"x-api-key": key, "Content-Type": "application/json"})
		if r.Status == 201 {
			r.JSON(t, &c)
		}
		return r, c
	}

	// An admin key makes read keys by default, admin keys when asked.
	r, read := create(admin.Secret, `{"label":"ci"}`)
	if r.Status != 201 || read.Data.Role != "read" {
		t.Fatalf("default role through POST /keys: %d %s", r.Status, r.Body)
	}
	r, admin2 := create(admin.Secret, `{"label":"second admin","role":"admin"}`)
	if r.Status != 201 || admin2.Data.Role != "admin" {
		t.Fatalf("admin key asking for an admin key: %d %s", r.Status, r.Body)
	}
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin2.Data.Key)); r.Status != 200 {
		t.Fatalf("the new admin key cannot list keys: %d %s", r.Status, r.Body)
	}
	r, explicitRead := create(admin.Secret, `{"role":"read"}`)
	if r.Status != 201 || explicitRead.Data.Role != "read" {
		t.Fatalf("explicit read role: %d %s", r.Status, r.Body)
	}

	// The read key works where any valid key does...
	if status := seam(t, kn, read.Data.Key); status != 200 {
		t.Fatalf("read key on a key-protected route: %d", status)
	}
	// ...and is 403 FORBIDDEN on every key route, whatever it asks.
	forbidden := []struct {
		method, path, body string
	}{
		{http.MethodGet, "/keys", ""},
		{http.MethodPost, "/keys", ""},
		{http.MethodPost, "/keys", `{"label":"escalate","role":"admin"}`},
		{http.MethodPost, "/keys", `{"role":"read"}`},
		{http.MethodDelete, "/keys/" + admin.Key.Prefix, ""},
		{http.MethodDelete, "/keys/" + admin2.Data.Prefix, ""},
		{http.MethodDelete, "/keys/" + explicitRead.Data.Prefix, ""},
		{http.MethodDelete, "/keys/" + read.Data.Prefix, ""},
	}
	for _, f := range forbidden {
		var b []byte
		if f.body != "" {
			b = []byte(f.body)
		}
		r := kn.Do(t, f.method, f.path, b, map[string]string{"x-api-key": read.Data.Key, "Content-Type": "application/json"})
		if r.Status != 403 || r.ErrorCode() != "FORBIDDEN" || !strings.Contains(string(r.Body), "admin role") {
			t.Errorf("read key %s %s %s: %d %s", f.method, f.path, f.body, r.Status, r.Body)
		}
	}
	// Nothing changed: no key was made or revoked by the read key.
	var l keyList
	kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)).JSON(t, &l)
	if l.Pagination.Total != 4 {
		t.Fatalf("acme has %d keys after the read key's attempts, want 4", l.Pagination.Total)
	}
	roles := map[string]string{}
	for _, k := range l.Data {
		if k.Revoked {
			t.Errorf("key %s was revoked", k.Prefix)
		}
		roles[k.Prefix] = k.Role
	}
	if roles[admin.Key.Prefix] != "admin" || roles[admin2.Data.Prefix] != "admin" || roles[read.Data.Prefix] != "read" {
		t.Errorf("listed roles %v", roles)
	}

	// Below the routes too: acting as the read key, a key of a higher role
	// is out of reach; one of its own role is not.
	p, reason, err := kn.svc.Authenticate(ctx, read.Data.Key)
	if err != nil || reason != "ok" || p.Role != apikey.RoleRead {
		t.Fatalf("read key principal: %+v %s %v", p, reason, err)
	}
	if _, err := kn.svc.RevokeAs(ctx, p, admin.Key.Prefix); err != apikey.ErrForbidden {
		t.Fatalf("a read principal revoking an admin key: %v, want ErrForbidden", err)
	}
	if r := kn.Do(t, http.MethodGet, "/keys", nil, withKey(admin.Secret)); r.Status != 200 {
		t.Fatalf("the admin key stopped working: %d", r.Status)
	}
	if _, err := kn.svc.RevokeAs(ctx, p, explicitRead.Data.Prefix); err != nil {
		t.Fatalf("a read principal revoking a read key of its account: %v", err)
	}
	// An admin key revokes a read key and another admin key.
	for _, prefix := range []string{read.Data.Prefix, admin2.Data.Prefix} {
		if r := kn.Do(t, http.MethodDelete, "/keys/"+prefix, nil, withKey(admin.Secret)); r.Status != 204 {
			t.Fatalf("admin revokes %s: %d %s", prefix, r.Status, r.Body)
		}
	}
	if status := seam(t, kn, read.Data.Key); status != 401 {
		t.Errorf("revoked read key: %d", status)
	}

	// RequireRole in front of a route that any key may reach otherwise.
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		if e, ok := apierror.As(err); ok {
			return c.Status(e.Status).SendString(e.Code)
		}
		return err
	}})
	app.Get("/x", kn.svc.Require(apikey.RequireOptions{}), apikey.RequireRole(apikey.RoleAdmin), func(c *fiber.Ctx) error { return c.SendString("ran") })
	app.Get("/unauthenticated", apikey.RequireRole(apikey.RoleRead), func(c *fiber.Ctx) error { return c.SendString("ran") })
	_, fresh := create(admin.Secret, "")
	for _, tc := range []struct {
		path, key string
		status    int
	}{
		{"/x", admin.Secret, 200}, {"/x", fresh.Data.Key, 403}, {"/x", "", 401}, {"/unauthenticated", "", 401},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.key != "" {
			req.Header.Set("x-api-key", tc.key)
		}
		res, err := app.Test(req, 5000)
		testenv.Must(t, err, "request")
		if res.StatusCode != tc.status {
			b, _ := io.ReadAll(res.Body)
			t.Errorf("%s with key %t: %d %s, want %d", tc.path, tc.key != "", res.StatusCode, b, tc.status)
		}
	}
}
