package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/app"
	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/httpcache"
	"github.com/attestd/attestd/internal/premium"
	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// rawTransport sends Accept-Encoding as the test says and never
// decompresses, so the representation a node chose is what the test sees.
var rawTransport = &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}

// fetch sends one request with the given headers and checks the answer
// against the OpenAPI document (a gzip body is checked decompressed; HEAD
// answers, which the document does not list apart from GET, are not).
func fetch(t testing.TB, node *apptest.Node, method, path string, header map[string]string) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(method, node.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := rawTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := &apptest.Response{Status: res.StatusCode, Header: res.Header, Body: b}
	check := *r
	if res.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: gzip answer does not decompress: %v", path, err)
		}
		if check.Body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if method != http.MethodHead { // HEAD answers are GET's without a body; the document lists GET
		apptest.Validate(t, req, &check)
	}
	return r
}

// addConfirmed writes one confirmed attestation of the env's first agent
// and returns its record.
func addConfirmed(t *testing.T, env *apptest.Env, seedN uint64) store.AttestationRecord {
	t.Helper()
	recs := seed.NewAttestations(env.Seeded.Agents[:1], 1, time.Now().Add(-time.Minute), maxSlot(t, env)+10, seedN)
	recs[0].Commitment = attestation.Confirmed
	if _, err := env.Store.Apply(context.Background(), &store.Batch{Attestations: recs}); err != nil {
		t.Fatal(err)
	}
	return recs[0]
}

// TestETagAndNotModifiedOnEveryCacheableRoute: every public GET carries a
// strong ETag per representation, honest Cache-Control, Vary and surrogate
// keys, and answers If-None-Match with 304 from the node's cache (no load),
// with the headers its 200 would carry.
func TestETagAndNotModifiedOnEveryCacheableRoute(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	conf := addConfirmed(t, env, 41)
	node.SettleEpoch(t)
	var lr listResp
	node.Get(t, "/attestations?limit=1&offset=5").JSON(t, &lr)
	final, agent := lr.Data[0].PDA, env.Seeded.Agents[0].PDA.String()
	cc := httpcache.DefaultPolicy().Headers()
	for _, tc := range []struct {
		path, control, keys string
	}{
		{"/stats", cc.Index, "stats"},
		{"/attestations", cc.Index, "lists"},
		{"/attestations?limit=100&agentPda=" + agent, cc.Index, "lists agent-" + agent},
		{"/attestations/" + final, cc.Finalized, "attestation-" + final},
		{"/attestations/" + conf.PDA, cc.Confirmed, "confirmed attestation-" + conf.PDA},
		{"/agents/" + agent, cc.Index, "agents agent-" + agent},
		{"/agents/" + agent + "/stats", cc.Index, "agents agent-" + agent},
		{"/openapi.json", "public, max-age=300", "openapi"},
		{"/agents", cc.Index, "agents"},
		{"/agents?limit=2&offset=1", cc.Index, "agents"},
		{"/stats/activity?bucket=day", cc.Index, "stats"},
		{"/agents/" + agent + "/activity", cc.Index, "agents agent-" + agent},
		{"/samples", cc.Index, "stats"},
	} {
		tags := map[string]string{}
		for _, enc := range []string{"", "gzip"} {
			h := map[string]string{"Accept-Encoding": enc}
			r := fetch(t, node, "GET", tc.path, h)
			etag := r.Header.Get("ETag")
			if r.Status != 200 || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 20 {
				t.Fatalf("%s (%q): %d with ETag %q", tc.path, enc, r.Status, etag)
			}
			if got := r.Header.Get("Cache-Control"); got != tc.control {
				t.Errorf("%s: Cache-Control %q, want %q", tc.path, got, tc.control)
			}
			if got := r.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("%s (%q): Vary %q", tc.path, enc, got)
			}
			if sk, ct := r.Header.Get("Surrogate-Key"), r.Header.Get("Cache-Tag"); sk != tc.keys || ct != strings.ReplaceAll(tc.keys, " ", ",") {
				t.Errorf("%s: Surrogate-Key %q Cache-Tag %q, want %q", tc.path, sk, ct, tc.keys)
			}
			tags[r.Header.Get("Content-Encoding")] = etag
			// The answer's own tag, weak or in a list, or "*": 304, with the
			// 200's caching headers and no body. HEAD too.
			for _, inm := range []string{etag, "W/" + etag, `"nope", ` + etag, "*", ` ,` + etag + `,`} {
				for _, method := range []string{"GET", "HEAD"} {
					nm := fetch(t, node, method, tc.path, map[string]string{"Accept-Encoding": enc, "If-None-Match": inm})
					if nm.Status != 304 || len(nm.Body) != 0 || nm.Header.Get("ETag") != etag ||
						nm.Header.Get("Cache-Control") != tc.control || nm.Header.Get("Vary") != "Accept-Encoding" ||
						nm.Header.Get("Surrogate-Key") != tc.keys {
						t.Errorf("%s %s If-None-Match %s (%q): %d, ETag %q, Cache-Control %q, %d bytes", method, tc.path, inm, enc,
							nm.Status, nm.Header.Get("ETag"), nm.Header.Get("Cache-Control"), len(nm.Body))
					}
				}
			}
			// Another tag, a malformed field, or one over the bound: the answer.
			for _, inm := range []string{`"nope"`, strings.Trim(etag, `"`), `*, ` + etag, strings.Repeat(`"x",`, 3000) + etag} {
				if nm := fetch(t, node, "GET", tc.path, map[string]string{"Accept-Encoding": enc, "If-None-Match": inm}); nm.Status != 200 || len(nm.Body) == 0 {
					t.Errorf("%s If-None-Match %.40q: %d, want 200 with the answer", tc.path, inm, nm.Status)
				}
			}
		}
		// Large answers have two representations with two tags; a client's
		// tag for one does not validate the other.
		if zt, ok := tags["gzip"]; ok {
			if zt == tags[""] {
				t.Errorf("%s: identity and gzip share the tag %s", tc.path, zt)
			}
			if r := fetch(t, node, "GET", tc.path, map[string]string{"If-None-Match": zt}); r.Status != 200 {
				t.Errorf("%s: the gzip tag validated the identity answer (%d)", tc.path, r.Status)
			}
		} else if tc.path == "/attestations" || tc.path == "/openapi.json" {
			t.Errorf("%s: expected a gzip representation", tc.path)
		}
	}
}

// TestNotModifiedBuildsNothing: once a value is cached, conditional
// requests are answered without loading it again.
func TestNotModifiedBuildsNothing(t *testing.T) {
	t.Parallel()
	_, node := seeded(t)
	r := node.Get(t, "/attestations?limit=100")
	etag := r.Header.Get("ETag")
	misses := func() float64 { return counterValue(t, node, "attestd_cache_misses_total") }
	before := misses()
	for i := 0; i < 20; i++ {
		if nm := fetch(t, node, "GET", "/attestations?limit=100", map[string]string{"If-None-Match": etag, "Accept-Encoding": "gzip"}); nm.Status != 304 {
			t.Fatalf("%d, want 304", nm.Status)
		}
	}
	if after := misses(); after != before {
		t.Fatalf("conditional requests loaded the value: misses %v -> %v", before, after)
	}
}

func counterValue(t *testing.T, node *apptest.Node, name string) float64 {
	t.Helper()
	mfs, err := node.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestFinalityDecidesCacheControl: a confirmed attestation is cacheable
// briefly; once finalized it is immutable, under a new tag, so a cache's
// confirmed copy does not validate.
func TestFinalityDecidesCacheControl(t *testing.T) {
	t.Parallel()
	env, node := seeded(t)
	conf := addConfirmed(t, env, 42)
	node.SettleEpoch(t)
	path := "/attestations/" + conf.PDA
	r := fetch(t, node, "GET", path, nil)
	cc := httpcache.DefaultPolicy().Headers()
	if r.Status != 200 || r.Header.Get("Cache-Control") != cc.Confirmed || strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
		t.Fatalf("confirmed: %d %q", r.Status, r.Header.Get("Cache-Control"))
	}
	old := r.Header.Get("ETag")
	if _, err := env.Store.Finalize(context.Background(), []string{conf.TxSignature}); err != nil {
		t.Fatal(err)
	}
	node.SettleEpoch(t)
	r = fetch(t, node, "GET", path, map[string]string{"If-None-Match": old})
	if r.Status != 200 || r.Header.Get("Cache-Control") != cc.Finalized || r.Header.Get("ETag") == old ||
		r.Header.Get("Surrogate-Key") != "attestation-"+conf.PDA {
		t.Fatalf("finalized: %d %q ETag %q (was %q) keys %q", r.Status, r.Header.Get("Cache-Control"), r.Header.Get("ETag"), old,
			r.Header.Get("Surrogate-Key"))
	}
	var one struct{ Data attestation.Attestation }
	r.JSON(t, &one)
	if one.Data.Commitment != attestation.Finalized {
		t.Fatalf("commitment %q", one.Data.Commitment)
	}
	// A list changes with a new attestation: its old tag no longer
	// validates; the new one does.
	lr := fetch(t, node, "GET", "/attestations", nil)
	addConfirmed(t, env, 43)
	node.SettleEpoch(t)
	if r := fetch(t, node, "GET", "/attestations", map[string]string{"If-None-Match": lr.Header.Get("ETag")}); r.Status != 200 {
		t.Fatalf("after a new attestation the old list tag still validates (%d)", r.Status)
	} else if again := fetch(t, node, "GET", "/attestations", map[string]string{"If-None-Match": r.Header.Get("ETag")}); again.Status != 304 {
		t.Fatalf("the new list tag does not validate (%d)", again.Status)
	}
}

// TestPolicyFromDeps: the configured policy is what answers say.
func TestPolicyFromDeps(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 50})
	pol := httpcache.Config{MaxAge: 2 * time.Second, SMaxAge: time.Minute, StaleWhileRevalidate: 0, FinalizedMaxAge: time.Hour}
	node := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) { d.HTTPCache = pol }})
	if got := fetch(t, node, "GET", "/stats", nil).Header.Get("Cache-Control"); got != "public, max-age=2, s-maxage=60" {
		t.Fatalf("stats: %q", got)
	}
	var lr listResp
	node.Get(t, "/attestations?limit=1").JSON(t, &lr)
	if got := fetch(t, node, "GET", "/attestations/"+lr.Data[0].PDA, nil).Header.Get("Cache-Control"); got != "public, max-age=3600, immutable" {
		t.Fatalf("finalized: %q", got)
	}
}

// TestNoValidatorWhereNothingMayBeCached: errors, /health, and every
// answer behind a key carry no ETag and no surrogate keys, say no-store
// (private, no-store when they depend on who asks), and ignore
// If-None-Match.
func TestNoValidatorWhereNothingMayBeCached(t *testing.T) {
	t.Parallel()
	env := apptest.NewEnv(t, apptest.Options{Agents: 2, Attestations: 100})
	keys, secret := keyedNode(t, env)
	limited := env.StartNode(t, apptest.NodeOptions{Configure: func(d *app.Deps) {
		d.Middleware = append(d.Middleware, env.NewLimiter(t, 1).Middleware())
	}})
	agent := env.Seeded.Agents[0].PDA.String()
	inm := map[string]string{"If-None-Match": "*"}
	withKey := map[string]string{"If-None-Match": "*", "x-api-key": secret}
	for _, tc := range []struct {
		node    *apptest.Node
		method  string
		path    string
		header  map[string]string
		status  int
		control string
	}{
		{keys, "GET", "/health", inm, 200, "no-store"},
		{keys, "GET", "/attestations/11111111111111111111111111111111", inm, 404, "no-store"},
		{keys, "GET", "/agents/11111111111111111111111111111111/stats", inm, 404, "no-store"},
		{keys, "GET", "/attestations?limit=0", inm, 400, "no-store"},
		{keys, "GET", "/nope", inm, 404, "no-store"},
		{keys, "DELETE", "/stats", inm, 405, "no-store"},
		{keys, "GET", "/premium/full-history/" + agent, withKey, 200, "private, no-store"},
		{keys, "GET", "/premium/forensic-report/" + agent, withKey, 200, "private, no-store"},
		{keys, "GET", "/premium/full-history/" + agent, inm, 401, "no-store"},
		{keys, "GET", "/keys", withKey, 200, "private, no-store"},
		{limited, "GET", "/stats", nil, 200, ""}, // spends the one request
		{limited, "GET", "/stats", inm, 429, "no-store"},
	} {
		r := fetch(t, tc.node, tc.method, tc.path, tc.header)
		if r.Status != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.Status, tc.status, r.Body)
			continue
		}
		if tc.control == "" {
			continue
		}
		if got := r.Header.Get("Cache-Control"); got != tc.control {
			t.Errorf("%s %s: Cache-Control %q, want %q", tc.method, tc.path, got, tc.control)
		}
		for _, h := range []string{"ETag", "Surrogate-Key", "Cache-Tag"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("%s %s (%d): %s %q", tc.method, tc.path, r.Status, h, v)
			}
		}
	}
}

// keyedNode is a node with the key and premium routes, and a key.
func keyedNode(t *testing.T, env *apptest.Env) (*apptest.Node, string) {
	t.Helper()
	var deps app.Deps
	var svc *apikey.Service
	node := env.StartNode(t, apptest.NodeOptions{
		Configure: func(d *app.Deps) { deps = *d },
		Routes: func(api *app.API) {
			var err error
			svc, err = apikey.New(context.Background(), apikey.Deps{Store: deps.Store, Redis: apptest.NewRedis(t, env.RedisURL),
				Channel: env.Prefix + apikey.ChannelSuffix, Logger: deps.Logger})
			testenv.Must(t, err, "key service")
			svc.Routes(api)
			h, err := premium.New(premium.Deps{Auth: svc.Require(apikey.RequireOptions{}), Store: deps.Store, Cache: deps.Cache, Logger: deps.Logger})
			testenv.Must(t, err, "premium")
			h.Routes(api)
		},
	})
	t.Cleanup(svc.Close)
	acc, _, err := svc.Store().EnsureAccount(context.Background(), "acme")
	testenv.Must(t, err, "account")
	k, err := svc.Create(context.Background(), acc.ID, "tests")
	testenv.Must(t, err, "key")
	return node, k.Secret
}
