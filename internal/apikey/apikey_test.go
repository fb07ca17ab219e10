package apikey_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/httpapi"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/gofiber/fiber/v2"
)

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
