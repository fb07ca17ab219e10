package webhook_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebhookBodiesWithAKeyTwiceAreRefused: a create or patch body with a
// member twice was read with the last one ({"url": a, "url": b} made a
// webhook to b). Each is 400 naming the member, at any depth.
func TestWebhookBodiesWithAKeyTwiceAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	for _, tc := range []struct{ method, path, body, key string }{
		{http.MethodPost, "/webhooks", `{"url":"` + rc.URL() + `","events":["attestation.created"],"url":"https://93.184.216.34/"}`, "url"},
		{http.MethodPost, "/webhooks", `{"url":"` + rc.URL() + `","events":["attestation.created"],"filter":{"agents":[],"agents":["x"]}}`, "agents"},
		{http.MethodPatch, "/webhooks/" + w.ID, `{"active":false,"active":true}`, "active"},
	} {
		r := h.Do(t, tc.method, tc.path, key, tc.body)
		if r.Status != http.StatusBadRequest || r.ErrorCode() != "INVALID_PARAM" || !strings.Contains(r.ErrorMessage(), `"`+tc.key+`" appears twice`) {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, r.Status, r.Body)
		}
	}
	if r := h.Do(t, http.MethodGet, "/webhooks", key, nil); strings.Count(string(r.Body), `"id":"wh_`) != 1 {
		t.Errorf("webhooks after the refusals: %s", r.Body)
	}
}
