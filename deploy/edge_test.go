package deploy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/devstack"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/ratelimit"
	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// counter counts the requests that reach the nodes, by path with query,
// and when each began and ended.
type counter struct {
	mu    sync.Mutex
	n     map[string]int
	spans []*[2]time.Time // began, ended (zero while in flight)
}

func (c *counter) middleware(ctx *fiber.Ctx) error {
	key := string(ctx.Request().URI().RequestURI()) // a copy: kept after the request
	span := &[2]time.Time{time.Now()}
	c.mu.Lock()
	c.n[key]++
	c.spans = append(c.spans, span)
	c.mu.Unlock()
	err := ctx.Next()
	c.mu.Lock()
	span[1] = time.Now()
	c.mu.Unlock()
	return err
}

// lastEndOfBegunBefore is when the last request the nodes began before t
// ended (t when none did): the last moment a node may have handed out
// what it knew before t. ok is false while one of them is in flight.
func (c *counter) lastEndOfBegunBefore(t time.Time) (last time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last = t
	for _, s := range c.spans {
		if !s[0].Before(t) {
			continue
		}
		if s[1].IsZero() {
			return time.Time{}, false
		}
		if s[1].After(last) {
			last = s[1]
		}
	}
	return last, true
}

func (c *counter) get(pathQuery string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := strings.CutPrefix(pathQuery, "^"); ok {
		return c.n[p] // below the root
	}
	return c.n[httpapi.Prefix+pathQuery]
}

// fleet is two API nodes behind nginx run from deploy/nginx.conf.
type fleet struct {
	env   *apptest.Env
	nodes []*apptest.Node
	edge  *devstack.Nginx
	seen  *counter
	key   string // a valid API key, when the nodes have the keyed routes
}

// fleetOptions shape the nodes.
type fleetOptions struct {
	policy httpcache.Config
	// middleware runs on every node after the request counter.
	middleware func(*apptest.Env) []fiber.Handler
	// keyed adds the key and premium routes, and makes a key.
	keyed bool
	// routes adds more routes to every node.
	routes func(t *testing.T, env *apptest.Env, api *app.API, deps app.Deps)
	// unlimited may add routes outside the middleware (deps.Unlimited) to
	// every node, and returns what adds its other routes.
	unlimited func(t *testing.T, env *apptest.Env, deps *app.Deps) func(*app.API)
}

func newFleet(t *testing.T, opt fleetOptions) *fleet {
	t.Helper()
	f := &fleet{env: apptest.NewEnv(t, apptest.Options{Agents: 3, Attestations: 400}), seen: &counter{n: map[string]int{}}}
	var extra []fiber.Handler
	if opt.middleware != nil {
		extra = opt.middleware(f.env)
	}
	var upstreams []string
	for range 2 {
		var deps app.Deps
		var more func(*app.API)
		n := f.env.StartNode(t, apptest.NodeOptions{
			Configure: func(d *app.Deps) {
				d.HTTPCache = opt.policy
				d.Middleware = append(append([]fiber.Handler{f.seen.middleware}, extra...), d.Middleware...)
				if opt.unlimited != nil {
					// The request counter sees these too.
					more = opt.unlimited(t, f.env, d)
					for i := range d.Unlimited {
						d.Unlimited[i].Handlers = append([]fiber.Handler{f.seen.middleware}, d.Unlimited[i].Handlers...)
					}
				}
				deps = *d
			},
			Routes: func(api *app.API) {
				if more != nil {
					more(api)
				}
				if opt.keyed {
					f.keyed(t, api, deps)
				}
				if opt.routes != nil {
					opt.routes(t, f.env, api, deps)
				}
			},
		})
		f.nodes = append(f.nodes, n)
		upstreams = append(upstreams, strings.TrimPrefix(n.Root, "http://"))
	}
	f.edge = testenv.Nginx(t, "nginx.conf", upstreams...)
	return f
}

// keyed adds the key and premium routes to a node, and makes the fleet's
// key the first time.
func (f *fleet) keyed(t *testing.T, api *app.API, deps app.Deps) {
	svc, err := apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Redis: apptest.NewRedis(t, f.env.RedisURL),
		Channel: f.env.Prefix + apikey.ChannelSuffix, Logger: deps.Logger})
	testenv.Must(t, err, "key service")
	t.Cleanup(svc.Close)
	svc.Routes(api)
	h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
	testenv.Must(t, err, "premium")
	h.Routes(api)
	if f.key == "" {
		acc, _, err := svc.Store().EnsureAccount(context.Background(), "edge")
		testenv.Must(t, err, "account")
		k, err := svc.Create(context.Background(), acc.ID, "edge tests")
		testenv.Must(t, err, "key")
		f.key = k.Secret
	}
}

// answer is one response through the edge.
type answer struct {
	status int
	header http.Header
	body   []byte // decompressed when gzip
	raw    int    // bytes on the wire
}

func (a answer) cache() string { return a.header.Get("X-Cache-Status") }

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 8}}

func (f *fleet) do(t *testing.T, c *http.Client, method, pathQuery string, header map[string]string) answer {
	t.Helper()
	target := f.edge.URL + httpapi.Prefix + pathQuery
	if p, ok := strings.CutPrefix(pathQuery, "^"); ok {
		target = f.edge.URL + p // below the root, not the API
	}
	req, err := http.NewRequest(method, target, nil)
	testenv.Must(t, err, "request")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	testenv.Must(t, err, "%s %s through the edge", method, pathQuery)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	testenv.Must(t, err, "read")
	a := answer{status: res.StatusCode, header: res.Header, body: b, raw: len(b)}
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		testenv.Must(t, err, "gzip")
		a.body, err = io.ReadAll(zr)
		testenv.Must(t, err, "gunzip")
	}
	return a
}

func (f *fleet) get(t *testing.T, pathQuery string, header map[string]string) answer {
	t.Helper()
	return f.do(t, client, http.MethodGet, pathQuery, header)
}

// warm requests pathQuery until the edge answers it from its cache.
func (f *fleet) warm(t *testing.T, pathQuery string, header map[string]string) answer {
	t.Helper()
	var a answer
	testenv.WaitForState(t, pathQuery+" a HIT", testenv.Patience, func() (bool, string) {
		a = f.get(t, pathQuery, header)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", pathQuery, a.status, a.body)
		}
		return a.cache() == "HIT", fmt.Sprintf("cache %q", a.cache())
	})
	return a
}

// long is a policy under which nothing public expires during a test.
var long = httpcache.Config{MaxAge: 0, SMaxAge: 10 * time.Minute, StaleWhileRevalidate: time.Minute, FinalizedMaxAge: 24 * time.Hour}

// TestEdgeServesRepeatedReads: a hot read is answered by the edge without
// reaching a node, per URL (query included) and per encoding the node
// would choose, 304 included; nothing of one client's request travels
// with the shared answer.
func TestEdgeServesRepeatedReads(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{policy: long, middleware: limiter(t, 1_000_000)})
	const list = "/attestations?limit=20"
	hot := f.warm(t, list, nil)
	reached := f.seen.get(list)
	for i := 0; i < 20; i++ {
		if a := f.get(t, list, nil); a.cache() != "HIT" || !bytes.Equal(a.body, hot.body) {
			t.Fatalf("repeat %d: %q", i, a.cache())
		}
	}
	if got := f.seen.get(list); got != reached {
		t.Fatalf("repeated reads reached the nodes: %d requests, %d before", got, reached)
	}
	// The encoding a node would choose is part of the key: a gzip client
	// gets the gzip answer (its own tag), once fetched; clients that spell
	// their preference differently share it; a client refusing gzip shares
	// the plain one.
	zipped := f.warm(t, list, map[string]string{"Accept-Encoding": "gzip"})
	if zipped.header.Get("Content-Encoding") != "gzip" || zipped.header.Get("ETag") == hot.header.Get("ETag") ||
		!bytes.Equal(zipped.body, hot.body) || zipped.raw >= len(hot.body)/2 {
		t.Fatalf("gzip answer: encoding %q, tag %s (plain %s), %d bytes on the wire", zipped.header.Get("Content-Encoding"),
			zipped.header.Get("ETag"), hot.header.Get("ETag"), zipped.raw)
	}
	reached = f.seen.get(list)
	for ae, wantGzip := range map[string]bool{
		"gzip, deflate, br": true, "br;q=1.0, GZIP;q=0.5": true, "x-gzip": true, "gzip;q=0": false, "gzip;q=0.000": false,
		"deflate": false, "identity": false, "br, gzip;q=2": false,
	} {
		a := f.get(t, list, map[string]string{"Accept-Encoding": ae})
		if a.cache() != "HIT" || (a.header.Get("Content-Encoding") == "gzip") != wantGzip || !bytes.Equal(a.body, hot.body) {
			t.Errorf("Accept-Encoding %q: %q, Content-Encoding %q", ae, a.cache(), a.header.Get("Content-Encoding"))
		}
		if a.header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", ae, a.header.Get("Vary"))
		}
	}
	if got := f.seen.get(list); got != reached {
		t.Fatalf("encodings of a kept answer reached the nodes: %d requests, %d before", got, reached)
	}
	// The query is part of the key. An answer a node made for this request
	// carries this client's rate-limit budget; a kept one carries none.
	if a := f.get(t, "/attestations?limit=21", nil); a.cache() == "HIT" || f.seen.get("/attestations?limit=21") != 1 ||
		a.header.Get("RateLimit-Remaining") == "" {
		t.Fatalf("another query: %q, RateLimit-Remaining %q", a.cache(), a.header.Get("RateLimit-Remaining"))
	}
	if a := f.get(t, list, nil); a.cache() != "HIT" || a.header.Get("RateLimit-Remaining") != "" || a.header.Get("RateLimit-Limit") != "" {
		t.Fatalf("a kept answer: %q with RateLimit-Remaining %q", a.cache(), a.header.Get("RateLimit-Remaining"))
	}
	// A 304 through the edge, for either representation, without a node.
	for _, c := range []struct{ ae, etag string }{{"", hot.header.Get("ETag")}, {"gzip", zipped.header.Get("ETag")}} {
		a := f.get(t, list, map[string]string{"Accept-Encoding": c.ae, "If-None-Match": c.etag})
		if a.status != 304 || len(a.body) != 0 || a.header.Get("ETag") != c.etag {
			t.Errorf("If-None-Match %s (%q): %d %q, %d bytes", c.etag, c.ae, a.status, a.cache(), len(a.body))
		}
	}
	if a := f.get(t, list, map[string]string{"If-None-Match": zipped.header.Get("ETag")}); a.status != 200 {
		t.Errorf("the gzip tag validated the plain answer: %d", a.status)
	}
	if got := f.seen.get(list); got != reached {
		t.Fatalf("conditional reads reached the nodes: %d requests, %d before", got, reached)
	}
	// A shared answer carries the edge's request id and no client's
	// rate-limit budget: the node's headers about the request that filled
	// the cache stay behind.
	a := f.get(t, list, map[string]string{"X-Request-ID": "chosen-by-a-client"})
	b := f.get(t, list, nil)
	if a.header.Get("X-Request-ID") == "chosen-by-a-client" || a.header.Get("X-Request-ID") == b.header.Get("X-Request-ID") ||
		a.header.Get("X-Request-ID") == "" {
		t.Errorf("request ids through the edge: %q then %q", a.header.Get("X-Request-ID"), b.header.Get("X-Request-ID"))
	}
}

// TestEdgeKeepsNothingPrivateOrFailed: errors, /health and answers behind
// a key are never kept: each request reaches a node.
func TestEdgeKeepsNothingPrivateOrFailed(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{policy: long, keyed: true})
	agent := f.env.Seeded.Agents[0].PDA.String()
	for _, c := range []struct {
		path, control string
	}{
		{"/health", "no-store"},
		{"/attestations/11111111111111111111111111111111", "no-store"}, // 404: the id may be indexed a moment later
		{"/attestations?limit=0", "no-store"},                          // 400
		{"/agents/11111111111111111111111111111111/stats", "no-store"}, // 404
		{"/nope", "no-store"},
		{"/premium/full-history/" + agent, "private, no-store"},
		{"/premium/forensic-report/" + agent, "private, no-store"},
		{"/keys", "private, no-store"},
	} {
		for i := 1; i <= 3; i++ {
			a := f.get(t, c.path, map[string]string{"x-api-key": f.key})
			if a.cache() == "HIT" || a.header.Get("Cache-Control") != c.control || f.seen.get(c.path) != i {
				t.Fatalf("%s #%d: %d %q, Cache-Control %q, %d requests at the nodes", c.path, i, a.status, a.cache(),
					a.header.Get("Cache-Control"), f.seen.get(c.path))
			}
		}
	}
	// A keyed answer is not served to a client without the key.
	if a := f.get(t, "/premium/full-history/"+agent, nil); a.status != 401 {
		t.Fatalf("premium without a key through the edge: %d", a.status)
	}
}

// TestEdgeBoundsStaleness: after a new attestation, once the nodes have
// heard of it, the edge serves no list, stats or agent answer older than
// s-maxage + stale-while-revalidate (plus nginx's one-second clock); a
// finalized attestation is served by the edge all along, without a node.
func TestEdgeBoundsStaleness(t *testing.T) {
	t.Parallel()
	pol := httpcache.Config{MaxAge: 0, SMaxAge: time.Second, StaleWhileRevalidate: time.Second, FinalizedMaxAge: 24 * time.Hour}
	f := newFleet(t, fleetOptions{policy: pol})
	agent := f.env.Seeded.Agents[0].PDA.String()
	var page struct{ Data []attestation.Attestation }
	if err := json.Unmarshal(f.warm(t, "/attestations?limit=5", nil).body, &page); err != nil {
		t.Fatal(err)
	}
	final := "/attestations/" + page.Data[len(page.Data)-1].PDA
	f.warm(t, final, nil)
	finalReached := f.seen.get(final)
	views := []string{"/attestations?limit=5", "/stats", "/agents/" + agent, "/attestations?agentPda=" + agent}
	for _, v := range views {
		f.warm(t, v, nil)
	}
	var ag struct{ Data attestation.Agent }
	if err := json.Unmarshal(f.warm(t, "/agents/"+agent, nil).body, &ag); err != nil {
		t.Fatal(err)
	}
	// A new attestation of the agent, through the write path.
	recs := seed.NewAttestations(f.env.Seeded.Agents[:1], 1, time.Now(), 1<<40, 77)
	if _, err := f.env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	for _, n := range f.nodes {
		n.SettleEpoch(t)
	}
	// From here on nodes answer with the new attestation. An answer they
	// began before may still be on its way into the edge's cache: the
	// bound counts from when the last of those ended (plus a moment for
	// the edge to store it), and nginx counts freshness in whole seconds.
	heard := time.Now()
	bound := pol.StaleBound() + time.Second
	var since time.Time // set at the first poll, once answers in flight have ended
	fresh := map[string]func([]byte) bool{
		"/attestations?limit=5":           func(b []byte) bool { return strings.Contains(string(b), recs[0].PDA) },
		"/attestations?agentPda=" + agent: func(b []byte) bool { return strings.Contains(string(b), recs[0].PDA) },
		"/stats":                          func(b []byte) bool { return strings.Contains(string(b), `"attestations":401`) },
		"/agents/" + agent: func(b []byte) bool {
			var now struct{ Data attestation.Agent }
			return json.Unmarshal(b, &now) == nil && now.Data.Metrics.AttestationCount == ag.Data.Metrics.AttestationCount+1
		},
	}
	pending := map[string]bool{}
	for _, v := range views {
		pending[v] = true
	}
	deadline := heard.Add(bound + 30*time.Second)
	for len(pending) > 0 {
		if since.IsZero() {
			if last, ok := f.seen.lastEndOfBegunBefore(heard); ok {
				since = last.Add(250 * time.Millisecond)
			}
		}
		for _, v := range views {
			start := time.Now()
			a := f.get(t, v, nil)
			if a.status != 200 {
				t.Fatalf("%s: %d", v, a.status)
			}
			switch {
			case fresh[v](a.body):
				delete(pending, v)
			case !since.IsZero() && start.After(since.Add(bound)):
				t.Fatalf("%s: asked %s after the nodes heard of the new attestation, the edge answered without it (%s)",
					v, start.Sub(heard).Round(time.Millisecond), a.cache())
			}
		}
		// Finalized: from the edge all along, never from a node.
		if a := f.get(t, final, nil); a.cache() != "HIT" || f.seen.get(final) != finalReached {
			t.Fatalf("finalized attestation: %q, %d requests at the nodes", a.cache(), f.seen.get(final))
		}
		if time.Now().After(deadline) {
			t.Fatalf("still stale after %s: %v", time.Since(heard), pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("every view fresh %s after the nodes heard the write (bound %s)", time.Since(heard).Round(time.Millisecond), bound)
}

// limiter is the nodes' per-IP limit, trusting the edge (127.0.0.1) alone
// for X-Forwarded-For, as ATTESTD_TRUSTED_PROXIES would.
func limiter(t *testing.T, limit int) func(*apptest.Env) []fiber.Handler {
	return func(env *apptest.Env) []fiber.Handler {
		o, err := redis.ParseURL(env.RedisURL)
		testenv.Must(t, err, "redis url")
		rdb := redis.NewClient(o)
		t.Cleanup(func() { rdb.Close() })
		l, err := ratelimit.New(rdb, ratelimit.Config{Limit: limit, Window: time.Minute, KeyPrefix: env.Prefix + "rl:",
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Timeout: 3 * time.Second},
			prometheus.NewRegistry(), nil)
		testenv.Must(t, err, "limiter")
		t.Cleanup(l.Close)
		return []fiber.Handler{l.Middleware()}
	}
}

// TestEdgePassesClientAddresses: through the edge, the nodes' rate limit
// counts each client by its own address (the edge's X-Forwarded-For,
// trusted from the edge only), not by the edge's, and not by what a client
// claims; a 429 is never kept for others.
func TestEdgePassesClientAddresses(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{policy: long, middleware: limiter(t, 3)})
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
	}
	spoof := map[string]string{"X-Forwarded-For": "198.51.100.7", "X-Real-IP": "198.51.100.8"}
	a, b := from("127.0.0.2"), from("127.0.0.3")
	for i := 1; i <= 3; i++ {
		spoof["X-Forwarded-For"] = "198.51.100." + string(rune('0'+i)) // a new claim each time
		if r := f.do(t, a, http.MethodGet, "/health", spoof); r.status != 200 || r.header.Get("RateLimit-Remaining") != string(rune('0'+3-i)) {
			t.Fatalf("client A request %d: %d, RateLimit-Remaining %q", i, r.status, r.header.Get("RateLimit-Remaining"))
		}
	}
	r := f.do(t, a, http.MethodGet, "/health", spoof)
	if r.status != 429 || r.cache() == "HIT" || r.header.Get("Retry-After") == "" {
		t.Fatalf("client A's fourth request: %d %q, Retry-After %q", r.status, r.cache(), r.header.Get("Retry-After"))
	}
	if r := f.do(t, b, http.MethodGet, "/health", nil); r.status != 200 {
		t.Fatalf("client B was limited by client A's requests: %d", r.status)
	}
}
