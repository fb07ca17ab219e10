package webhookapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
)

// TestIssue26InputValidation: bad windows, overlaps and schemes are 400 in
// the envelope; an inactive webhook's recovery is 409.
func TestIssue26InputValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("validate"))
	rc := newReceiver(t, nil)
	c := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	now := time.Now().UTC()
	iso := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	day := 24 * time.Hour
	bad := []struct {
		path string
		body any
		want string
	}{
		{"/recover", map[string]any{}, "since is required"},
		{"/recover", map[string]any{"since": "yesterday"}, "RFC 3339"},
		{"/recover", map[string]any{"since": 1700000000}, "must be a string"},
		{"/recover", map[string]any{"since": iso(-time.Hour), "until": iso(-2 * time.Hour)}, "before until"},
		{"/recover", map[string]any{"since": iso(-time.Hour), "until": iso(-time.Hour)}, "before until"},
		{"/recover", map[string]any{"since": iso(time.Hour)}, "before until"},
		{"/recover", map[string]any{"since": iso(-20 * day), "until": iso(-day)}, "at most"},
		{"/recover", map[string]any{"since": iso(-31 * day), "until": iso(-30*day + time.Hour)}, "retention"},
		{"/recover", map[string]any{"since": iso(-2 * time.Hour), "until": iso(time.Hour)}, "future"},
		{"/recover", map[string]any{"since": iso(-time.Hour), "status": "succeeded"}, "status must be"},
		{"/recover", map[string]any{"since": iso(-time.Hour), "status": 1}, "must be a string"},
		{"/recover", map[string]any{"since": iso(-time.Hour), "extra": 1}, "unknown field"},
		{"/recover", `{"since": "` + iso(-time.Hour) + `", "since": "` + iso(-time.Hour) + `"}`, ""},
		{"/recover", `[]`, ""},
		{"/recover", map[string]any{"since": "0001-01-01T00:00:00Z"}, "RFC 3339"},
		{"/recover", map[string]any{"since": strings.Repeat("9", 100)}, "RFC 3339"},
		{"/rotate-secret", map[string]any{"overlapSeconds": -1}, "overlapSeconds"},
		{"/rotate-secret", map[string]any{"overlapSeconds": 604801}, "overlapSeconds"},
		{"/rotate-secret", map[string]any{"overlapSeconds": 1.5}, "overlapSeconds"},
		{"/rotate-secret", map[string]any{"overlapSeconds": "60"}, "overlapSeconds"},
		{"/rotate-secret", `{"overlapSeconds": 1e3}`, "overlapSeconds"},
		{"/rotate-secret", map[string]any{"overlap": 60}, "unknown field"},
		{"", map[string]any{"signatureScheme": "v2"}, "signatureScheme"},
		{"", map[string]any{"signatureScheme": []string{"v1"}}, "signatureScheme"},
		{"", map[string]any{"rateLimitPerSecond": 0}, "rateLimitPerSecond"},
		{"", map[string]any{"rateLimitPerSecond": 100001}, "rateLimitPerSecond"},
		{"", map[string]any{"rateLimitPerSecond": "5"}, "rateLimitPerSecond"},
		{"", map[string]any{"rateLimitPerSecond": 2.5}, "rateLimitPerSecond"},
	}
	for _, b := range bad {
		method := http.MethodPost
		if b.path == "" {
			method = http.MethodPatch
		}
		r := h.Do(t, method, "/webhooks/"+c.ID+b.path, key, b.body)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || !strings.Contains(string(r.Body), b.want) {
			t.Errorf("%s %s %v: %d %s", method, b.path, b.body, r.Status, r.Body)
		}
	}
	// Hostile bodies: each refused in the envelope, never a 500.
	hostile := []struct {
		path, ctype string
		body        string
		status      int
	}{
		{"/recover", "application/json", `{"since": "` + strings.Repeat("x", 20<<10) + `"}`, http.StatusRequestEntityTooLarge},
		{"/recover", "text/plain", `{"since": "` + iso(-time.Hour) + `"}`, http.StatusUnsupportedMediaType},
		{"/recover", "application/json", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), http.StatusBadRequest},
		{"/recover", "application/json", `{"since": "2026-11-21T10:00:00+99:00"}`, http.StatusBadRequest},
		{"/recover", "application/json", `{"since": "2026-11-21T10:00:00\u0000Z"}`, http.StatusBadRequest},
		{"/recover", "application/json", `{"since": "` + iso(-time.Hour) + `"} {}`, http.StatusBadRequest},
		{"/recover", "application/json", `{"since": null}`, http.StatusBadRequest},
		{"/recover", "application/json", `{"since": "` + iso(-time.Hour) + `", "until": {}}`, http.StatusBadRequest},
		{"/recover", "application/json", "ÿþ", http.StatusBadRequest},
		{"/rotate-secret", "application/json", `{"overlapSeconds": 1e400}`, http.StatusBadRequest},
		{"/rotate-secret", "application/json", `{"overlapSeconds": 99999999999999999999}`, http.StatusBadRequest},
		{"/rotate-secret", "application/json", `{"overlapSeconds": null}`, http.StatusBadRequest},
		{"/rotate-secret", "application/json", `null`, http.StatusBadRequest},
		{"", "application/json", `{"rateLimitPerSecond": 1e2}`, http.StatusBadRequest},
		{"", "application/json", `{"signatureScheme": "V1A"}`, http.StatusBadRequest},
		{"", "application/json", `{"signatureScheme": "v1\u0000"}`, http.StatusBadRequest},
	}
	for _, x := range hostile {
		method := http.MethodPost
		if x.path == "" {
			method = http.MethodPatch
		}
		r := h.node.Do(t, method, "/webhooks/"+c.ID+x.path, []byte(x.body), map[string]string{"x-api-key": key, "content-type": x.ctype})
		if r.Status != x.status || r.ErrorCode() == "" {
			t.Errorf("%s %s %.60q: %d %s, want %d", method, x.path, x.body, r.Status, r.Body, x.status)
		}
	}
	// Valid edge values pass.
	if v := h.Patch(t, key, c.ID, map[string]any{"rateLimitPerSecond": 100000}); v.RateLimitPerSecond == nil {
		t.Error("rateLimitPerSecond 100000 refused")
	}
	if v := h.Patch(t, key, c.ID, map[string]any{"rateLimitPerSecond": nil}); v.RateLimitPerSecond != nil {
		t.Error("rateLimitPerSecond null kept a limit")
	}
	if r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/rotate-secret", key, nil); r.Status != http.StatusOK {
		t.Errorf("rotate without a body: %d %s", r.Status, r.Body)
	}
	if r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/rotate-secret", key, map[string]any{"overlapSeconds": 0}); r.Status != http.StatusOK {
		t.Errorf("rotate with overlap 0: %d %s", r.Status, r.Body)
	} else if v := h.Webhook(t, key, c.ID); v.PreviousSecretExpiresAt != nil {
		t.Errorf("overlap 0 left an overlap: %+v", v)
	}
	if r := h.Do(t, http.MethodGet, "/webhooks/"+c.ID+"/recoveries/rcv_0123", key, nil); r.Status != http.StatusBadRequest {
		t.Errorf("bad recovery id: %d", r.Status)
	}
	if r := h.Do(t, http.MethodGet, "/webhooks/"+c.ID+"/recoveries/rcv_0123456789abcdef01234567", key, nil); r.Status != http.StatusNotFound {
		t.Errorf("unknown recovery: %d", r.Status)
	}
	// Another account sees none of it.
	other := h.Key(t, testenv.Name("validate-other"))
	for _, p := range []string{"/recover", "/rotate-secret"} {
		if r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+p, other, map[string]any{"since": iso(-time.Hour)}); r.Status != http.StatusNotFound &&
			r.Status != http.StatusBadRequest {
			t.Errorf("another account's %s: %d %s", p, r.Status, r.Body)
		}
	}
	if r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", other, map[string]any{"since": iso(-time.Hour)}); r.Status != http.StatusNotFound {
		t.Errorf("another account's recover: %d %s", r.Status, r.Body)
	}
	h.Patch(t, key, c.ID, map[string]any{"active": false})
	if r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, map[string]any{"since": iso(-time.Hour)}); r.Status != http.StatusConflict {
		t.Errorf("recover an inactive webhook: %d %s", r.Status, r.Body)
	}
}

// TestVerifyRouteRefusesBadInput: a body, another account's webhook, a
// malformed id.
func TestVerifyRouteRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key, other := h.Key(t, "acme"), h.Key(t, "other")
	w := h.Create(t, key, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"attestation.created"}})
	for _, c := range []struct {
		key, path string
		body      any
		want      int
	}{
		{key, "/webhooks/" + w.ID + "/verify", `{"x":1}`, http.StatusBadRequest},
		{other, "/webhooks/" + w.ID + "/verify", nil, http.StatusNotFound},
		{key, "/webhooks/wh_nothex/verify", nil, http.StatusBadRequest},
		{key, "/webhooks/" + w.ID + "/verify?now=1", nil, http.StatusBadRequest},
	} {
		if r := h.Do(t, http.MethodPost, c.path, c.key, c.body); r.Status != c.want {
			t.Errorf("POST %s: %d %s, want %d", c.path, r.Status, r.Body, c.want)
		}
	}
}
