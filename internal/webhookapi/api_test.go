package webhookapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/apikey"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhookapi"
)

func TestWebhookRoutes(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxPerAccount = 3
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)

	r := h.Do(t, http.MethodPost, "/webhooks", key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"},
		"filter": map[string]any{"agents": []string{agentA}, "actionTypes": []string{"ToolCall"}}, "description": "audit feed"})
	if r.Status != http.StatusCreated || r.Header.Get("Cache-Control") != "private, no-store" || !strings.HasPrefix(r.Header.Get("Location"), "/api/v1/webhooks/wh_") {
		t.Fatalf("create: %d %v %s", r.Status, r.Header, r.Body)
	}
	var c struct {
		Data struct {
			created
			Filter struct{ Agents, ActionTypes []string }
		}
	}
	r.JSON(t, &c)
	w := c.Data
	if !strings.HasPrefix(w.Secret, "whsec_") || len(w.Secret) != 50 || !w.Active || w.URL != rc.URL() {
		t.Fatalf("created %+v", w)
	}
	if fmt.Sprint(w.Filter.Agents, w.Filter.ActionTypes) != fmt.Sprint([]string{agentA}, []string{"ToolCall"}) {
		t.Fatalf("filter %+v", w.Filter)
	}

	// The secret is shown once: never by get or list, and stored sealed.
	for _, path := range []string{"/webhooks/" + w.ID, "/webhooks"} {
		r = h.Do(t, http.MethodGet, path, key, nil)
		if r.Status != http.StatusOK || bytes.Contains(r.Body, []byte(w.Secret)) || bytes.Contains(r.Body, []byte(`"secret"`)) {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	var sealed []byte
	var keyID string
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(),
		`SELECT secret_sealed, secret_key_id FROM webhooks WHERE id = $1`, w.ID).Scan(&sealed, &keyID), "read sealed secret")
	if bytes.Contains(sealed, []byte(w.Secret)) || bytes.Contains(sealed, []byte(strings.TrimPrefix(w.Secret, "whsec_"))) {
		t.Fatal("the secret is stored in the clear")
	}
	opened, err := h.cfg.Keys.Open(sealed, keyID, []byte(w.ID))
	if err != nil || string(opened) != w.Secret {
		t.Fatalf("sealed secret does not open to the one shown: %v", err)
	}

	// PATCH: change some fields, switch off and on.
	r = h.Do(t, http.MethodPatch, "/webhooks/"+w.ID, key, map[string]any{"events": []string{"agent.revoked", "attestation.created"},
		"filter": map[string]any{}, "active": false})
	var got struct{ Data webhookapi.View }
	r.JSON(t, &got)
	if r.Status != http.StatusOK || got.Data.Active || got.Data.DisabledReason == nil || len(got.Data.Filter.Agents) != 0 ||
		len(got.Data.Events) != 2 || got.Data.Description != "audit feed" {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	r = h.Do(t, http.MethodPatch, "/webhooks/"+w.ID, key, map[string]any{"active": true})
	r.JSON(t, &got)
	if !got.Data.Active || got.Data.DisabledReason != nil || got.Data.DisabledAt != nil {
		t.Fatalf("re-enable: %s", r.Body)
	}

	// The account limit.
	h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"agent.registered"}})
	h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"agent.registered"}})
	r = h.Do(t, http.MethodPost, "/webhooks", key, map[string]any{"url": rc.URL(), "events": []string{"agent.registered"}})
	if r.Status != http.StatusConflict || r.ErrorCode() != webhookapi.CodeWebhookLimitReached {
		t.Fatalf("fourth webhook: %d %s", r.Status, r.Body)
	}
	r = h.Do(t, http.MethodGet, "/webhooks?limit=2&offset=1", key, nil)
	var list struct {
		Data       []webhookapi.View
		Pagination struct{ Limit, Offset, Total int }
	}
	r.JSON(t, &list)
	if len(list.Data) != 2 || list.Pagination.Total != 3 || list.Pagination.Limit != 2 {
		t.Fatalf("list: %s", r.Body)
	}

	// Another account sees none of it: every route is 404 for its key.
	other := h.Key(t, "other")
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/webhooks/" + w.ID}, {http.MethodPatch, "/webhooks/" + w.ID}, {http.MethodDelete, "/webhooks/" + w.ID},
		{http.MethodGet, "/webhooks/" + w.ID + "/deliveries"}, {http.MethodPost, "/webhooks/" + w.ID + "/test"},
		{http.MethodPost, "/webhooks/" + w.ID + "/deliveries/msg_0123456789abcdef0123456789abcdef/retry"},
	} {
		var body any
		if c.method == http.MethodPatch {
			body = map[string]any{"active": false}
		}
		r := h.Do(t, c.method, c.path, other, body)
		if r.Status != http.StatusNotFound || r.ErrorCode() != "WEBHOOK_NOT_FOUND" {
			t.Errorf("other account %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	r = h.Do(t, http.MethodGet, "/webhooks", other, nil)
	r.JSON(t, &list)
	if len(list.Data) != 0 || list.Pagination.Total != 0 {
		t.Fatalf("other account lists %s", r.Body)
	}
	// Unknown delivery of one's own webhook.
	r = h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/deliveries/msg_0123456789abcdef0123456789abcdef/retry", key, nil)
	if r.Status != http.StatusNotFound || r.ErrorCode() != webhookapi.CodeDeliveryNotFound {
		t.Fatalf("unknown delivery: %d %s", r.Status, r.Body)
	}

	// No key, a bad key.
	for _, k := range []string{"", "atst_nope"} {
		if r := h.Do(t, http.MethodGet, "/webhooks", k, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("key %q: %d", k, r.Status)
		}
	}

	// DELETE, then it is gone.
	if r := h.Do(t, http.MethodDelete, "/webhooks/"+w.ID, key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := h.Do(t, m, "/webhooks/"+w.ID, key, nil); r.Status != http.StatusNotFound {
			t.Fatalf("%s after delete: %d", m, r.Status)
		}
	}
}

// TestHostileRequests is the hostile matrix of the routes' input: each
// case must get its 4xx in the envelope (apptest checks the envelope and
// the contract), never a 2xx or a 5xx.
func TestHostileRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	good := func(extra string) string {
		return `{"url":"https://example.com/x","events":["attestation.created"]` + extra + `}`
	}
	type tc struct {
		method, path, ctype string
		body                string
		status              int
	}
	wh := "/webhooks/" + w.ID
	cases := []tc{
		{"POST", "/webhooks", "application/jsonx", good(""), 415},
		{"POST", "/webhooks", "text/plain", good(""), 415},
		{"POST", "/webhooks", "application/json", "", 400},
		{"POST", "/webhooks", "application/json", "null", 400},
		{"POST", "/webhooks", "application/json", "[]", 400},
		{"POST", "/webhooks", "application/json", `"x"`, 400},
		{"POST", "/webhooks", "application/json", good("") + "{}", 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x"}`, 400},
		{"POST", "/webhooks", "application/json", `{"events":["attestation.created"]}`, 400},
		{"POST", "/webhooks", "application/json", good(`,"secret":"whsec_mine"`), 400},
		{"POST", "/webhooks", "application/json", good(`,"active":false`), 400},
		{"POST", "/webhooks", "application/json", `{"url":1,"events":["attestation.created"]}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":"attestation.created"}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":[]}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":["attestation.deleted"]}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":["*"]}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":["agent.revoked","agent.revoked"]}`, 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":[null]}`, 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":null`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":[]`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"agents":["not-an-address"]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"agents":"` + agentA + `"}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"agents":["` + agentA + `","` + agentA + `"]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"actionTypes":["Teleport"]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"actionTypes":["toolcall"]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"agentz":[]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"filter":{"agents":[` + strings.Repeat(`"`+agentA+`",`, 100) + `"` + agentB + `"]}`), 400},
		{"POST", "/webhooks", "application/json", good(`,"description":"` + strings.Repeat("é", 201) + `"`), 400},
		{"POST", "/webhooks", "application/json", good(`,"description":"bell\u0007"`), 400},
		{"POST", "/webhooks", "application/json", good(`,"description":7`), 400},
		{"POST", "/webhooks", "application/json", `{"url":"https://example.com/x","events":["attestation.created"],` +
			`"description":"` + strings.Repeat("a", 17000) + `"}`, 413},
		{"POST", "/webhooks", "application/json", `{"url":"` + strings.Repeat("a", 3000) + `","events":["attestation.created"]}`, 400},
		{"POST", "/webhooks?x=1", "application/json", good(""), 400},
		{"GET", "/webhooks?limit=0", "", "", 400},
		{"GET", "/webhooks?limit=x", "", "", 400},
		{"GET", "/webhooks?offset=-1", "", "", 400},
		{"GET", "/webhooks?offset=100001", "", "", 400},
		{"GET", "/webhooks?limit=1&limit=2", "", "", 400},
		{"GET", "/webhooks?secret=1", "", "", 400},
		{"GET", "/webhooks/wh_nothex", "", "", 400},
		{"GET", "/webhooks/wh_0123456789abcdef01234567", "", "", 404},
		{"GET", "/webhooks/WH_0123456789ABCDEF01234567", "", "", 400},
		{"GET", "/webhooks/" + strings.Repeat("a", 500), "", "", 400},
		{"GET", "/webhooks/%00", "", "", 400},
		{"GET", wh + "?x=1", "", "", 400},
		{"PATCH", wh, "application/json", `{}`, 200},
		{"PATCH", wh, "application/json", `{"url":"http://10.0.0.1/x"}`, 400},
		{"PATCH", wh, "application/json", `{"active":"yes"}`, 400},
		{"PATCH", wh, "application/json", `{"active":null}`, 400},
		{"PATCH", wh, "application/json", `{"events":[]}`, 400},
		{"PATCH", wh, "application/json", `{"id":"wh_0123456789abcdef01234567"}`, 400},
		{"PATCH", wh, "text/plain", `{}`, 415},
		{"PATCH", "/webhooks/wh_0123456789abcdef01234567", "application/json", `{}`, 404},
		{"PUT", wh, "application/json", `{}`, 405},
		{"GET", wh + "/deliveries?limit=0", "", "", 400},
		{"GET", wh + "/deliveries?deliveryId=msg_1", "", "", 400},
		{"GET", wh + "/deliveries?deliveryId=msg_0123456789abcdef0123456789abcdef&deliveryId=msg_0123456789abcdef0123456789abcdef", "", "", 400},
		{"GET", wh + "/deliveries?status=failed", "", "", 400},
		{"GET", wh + "/deliveries?limit=1000", "", "", 200},
		{"GET", wh + "/deliveries?offset=100001", "", "", 400},
		{"GET", wh + "/deliveries?cursor=YXR0ZW1wdDoxMg", "", "", 200}, // attempt:12
		{"GET", wh + "/deliveries?cursor=YXR0ZW1wdDoxMg&offset=2", "", "", 400},
		{"GET", wh + "/deliveries?cursor=YXR0ZW1wdDowMTI", "", "", 400}, // attempt:012
		{"GET", wh + "/deliveries?cursor=YXR0ZW1wdDo", "", "", 400},     // attempt:
		{"GET", wh + "/deliveries?cursor=bm90IG9uZQ", "", "", 400},      // not one
		{"GET", wh + "/deliveries?cursor=!!", "", "", 400},
		{"GET", wh + "/deliveries?cursor=" + strings.Repeat("A", 49), "", "", 400},
		{"POST", wh + "/deliveries/msg_nothex/retry", "", "", 400},
		{"POST", wh + "/deliveries/" + strings.Repeat("m", 300) + "/retry", "", "", 400},
		{"POST", wh + "/test", "application/json", `{"type":"x"}`, 400},
		{"POST", wh + "/test?x=1", "", "", 400},
		{"DELETE", wh + "?force=1", "", "", 400},
		{"DELETE", "/webhooks", "", "", 405},
	}
	for _, c := range cases {
		hdr := map[string]string{"x-api-key": key}
		if c.ctype != "" {
			hdr["Content-Type"] = c.ctype
		}
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		r := h.node.Do(t, c.method, c.path, body, hdr)
		if r.Status != c.status {
			t.Errorf("%s %s %.60q: %d %s, want %d", c.method, c.path, c.body, r.Status, r.Body, c.status)
		}
	}
	t.Logf("hostile matrix: %d requests", len(cases))
}

// TestURLsRefusedAtCreation: every address a delivery must never reach is
// refused when a webhook is created or changed; without the development
// switch loopback is refused too.
func TestURLsRefusedAtCreation(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AllowLoopback = false
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "acme")
	dev := newHarness(t, harnessOpt{env: h.env}) // the same data, loopback allowed
	devKey := dev.Key(t, "acme")
	refused := []string{
		"https://127.0.0.1/x", "http://127.0.0.1:8080/x", "https://localhost/x", "https://[::1]/x",
		"https://169.254.169.254/latest/meta-data/", "https://[fd00:ec2::254]/", "https://10.0.0.1/x", "https://192.168.1.10/x",
		"https://172.16.0.1/x", "https://100.64.0.1/x", "https://[::ffff:127.0.0.1]/x", "https://[::ffff:169.254.169.254]/x",
		"https://[64:ff9b::a9fe:a9fe]/x", "https://[2002:a9fe:a9fe::]/x", "https://[fe80::1]/x", "https://0.0.0.0/x",
		"https://2130706433/x", "https://0177.0.0.1/x", "https://0x7f.0.0.1/x", "https://127.1/x",
		"https://user:pw@example.com/x", "ftp://example.com/x", "https://example.com/x#f", "https://224.0.0.1/x",
		"https://does-not-resolve.invalid/x",
	}
	for _, u := range refused {
		r := h.Do(t, http.MethodPost, "/webhooks", key, map[string]any{"url": u, "events": []string{"attestation.created"}})
		if r.Status != http.StatusBadRequest {
			t.Errorf("create %s: %d %s", u, r.Status, r.Body)
		}
	}
	// With loopback allowed (local development), loopback and http pass,
	// but private, link-local and metadata addresses still do not.
	for u, want := range map[string]int{
		"http://127.0.0.1:8080/x": 201, "https://localhost/x": 201, "https://[::1]/x": 201,
		"https://169.254.169.254/": 400, "https://10.0.0.1/x": 400, "https://[fd00:ec2::254]/": 400,
	} {
		r := dev.Do(t, http.MethodPost, "/webhooks", devKey, map[string]any{"url": u, "events": []string{"attestation.created"}})
		if r.Status != want {
			t.Errorf("dev create %s: %d %s, want %d", u, r.Status, r.Body, want)
		}
		if r.Status == 201 {
			var c struct{ Data created }
			r.JSON(t, &c)
			dev.Do(t, http.MethodDelete, "/webhooks/"+c.Data.ID, devKey, nil)
		}
	}
	// A stored loopback URL cannot be reached through PATCH either.
	w := dev.Create(t, devKey, map[string]any{"url": "https://93.184.216.34/x", "events": []string{"attestation.created"}})
	if r := h.Do(t, http.MethodPatch, "/webhooks/"+w.ID, key, map[string]any{"url": "https://127.0.0.1/x"}); r.Status != 400 {
		t.Errorf("patch to loopback: %d %s", r.Status, r.Body)
	}
}

func TestRoutesAnswer503WithoutKeys(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Keys = nil
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "acme")
	r := h.Do(t, http.MethodGet, "/webhooks", key, nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "ATTESTD_WEBHOOK_SECRET_KEYS") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// TestReadKeysCannotManageWebhooks: webhooks belong to the account's
// management, so every route answers 403 FORBIDDEN to a read key, and
// the key's account gains no webhook.
func TestReadKeysCannotManageWebhooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	admin := h.Key(t, "roles")
	acc, _, err := h.keys.Store().EnsureAccount(context.Background(), "roles")
	testenv.Must(t, err, "account")
	rk, err := h.keys.CreateWithRole(context.Background(), acc.ID, "reader", apikey.RoleRead)
	testenv.Must(t, err, "read key")
	rc := newReceiver(t, nil)
	w := h.Create(t, admin, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	body := map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/webhooks", body},
		{http.MethodGet, "/webhooks", nil},
		{http.MethodGet, "/webhooks/" + w.ID, nil},
		{http.MethodPatch, "/webhooks/" + w.ID, map[string]any{"active": false}},
		{http.MethodDelete, "/webhooks/" + w.ID, nil},
		{http.MethodGet, "/webhooks/" + w.ID + "/deliveries", nil},
		{http.MethodPost, "/webhooks/" + w.ID + "/deliveries/msg_00000000000000000000000000000000/retry", nil},
		{http.MethodPost, "/webhooks/" + w.ID + "/test", nil},
	} {
		if r := h.Do(t, tc.method, tc.path, rk.Secret, tc.body); r.Status != http.StatusForbidden || r.ErrorCode() != "FORBIDDEN" {
			t.Errorf("%s %s with a read key: %d %s", tc.method, tc.path, r.Status, r.Body)
		}
	}
	var list struct{ Data []webhookapi.View }
	h.Do(t, http.MethodGet, "/webhooks", admin, nil).JSON(t, &list)
	if len(list.Data) != 1 || !list.Data[0].Active {
		t.Fatalf("the read key changed the account's webhooks: %+v", list.Data)
	}
}
