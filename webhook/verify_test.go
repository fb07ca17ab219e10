package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testenv"
	"github.com/attestd/attestd/webhook"
)

// noEcho answers a verification request as a receiver that never asked
// for deliveries: 204, nothing echoed.
func noEcho([]byte) (int, []byte) { return http.StatusNoContent, nil }

// deliveryCounts counts the deliveries of the given webhooks by status.
func deliveryCounts(t *testing.T, h *harness, ids []string) map[string]int {
	t.Helper()
	rows, err := h.env.Store.Pool().Query(context.Background(),
		`SELECT status, count(*) FROM webhook_deliveries WHERE webhook_id = ANY($1) GROUP BY status`, ids)
	testenv.Must(t, err, "count deliveries")
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var st string
		var n int
		testenv.Must(t, rows.Scan(&st, &n), "scan")
		out[st] = n
	}
	testenv.Must(t, rows.Err(), "count deliveries")
	return out
}

// TestFarmedWebhooksGetNoDeliveries is the farm: several accounts create
// many webhooks to a third party's URL, which never answers the
// challenge. Events happen before and during the verification; the third
// party gets no event at all, only a bounded number of verification
// requests, and every delivery ends failed.
func TestFarmedWebhooksGetNoDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	victim := newReceiverWith(t, nil, noEcho)
	const accounts, perAccount, events = 3, 8, 5
	var ids []string
	for a := range accounts {
		key := h.key(t, fmt.Sprintf("farm%d", a))
		for range perAccount {
			ids = append(ids, h.create(t, key, map[string]any{"url": victim.URL(), "events": []string{"attestation.created"}}).ID)
		}
	}
	insertEvents(t, h.env.Store, events, agentA, "ToolCall") // before any verification
	h.startWorker(t, h.cfg, "w1")
	h.startWorker(t, h.cfg, "w2")
	insertEvents(t, h.env.Store, events, agentA, "ToolCall") // while the verifications run
	want := len(ids) * 2 * events
	waitFor(t, "every delivery failed", 60*time.Second, func() bool {
		if got := victim.deliveries(); len(got) != 0 {
			t.Fatalf("%d events reached a receiver that never answered the challenge, first %s", len(got), got[0].Body)
		}
		c := deliveryCounts(t, h, ids)
		return c["failed"] == want && c["pending"] == 0
	})
	key := h.key(t, "farm0")
	for _, id := range ids[:perAccount] {
		v := h.verification(t, key, id)
		if v.Status != "failed" || v.Attempts != 1+len(h.cfg.VerifySchedule) || v.Error == nil || v.NextAttemptAt != nil {
			t.Errorf("%s: verification %+v", id, v)
		}
	}
	if got := victim.deliveries(); len(got) != 0 {
		t.Fatalf("%d events reached a receiver that never answered the challenge, first %s", len(got), got[0].Body)
	}
	if got, max := len(victim.verifications()), len(ids)*(1+len(h.cfg.VerifySchedule)); got > max || got < len(ids) {
		t.Fatalf("%d verification requests, want between %d and %d", got, len(ids), max)
	}
	// Later events are not even queued for them.
	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	waitFor(t, "later events fanned out", 30*time.Second, func() bool {
		var n int
		testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM outbox WHERE dispatched_at IS NULL`).Scan(&n), "outbox")
		return n == 0
	})
	if c := deliveryCounts(t, h, ids); c["failed"] != want || len(c) != 1 {
		t.Fatalf("deliveries after the verification failed: %v", c)
	}
}

// TestVerifiedReceiverGetsEvents: a receiver that echoes the challenge is
// verified at the first request, which is signed as deliveries are; the
// events that happened before (held meanwhile) and after reach it.
func TestVerifiedReceiverGetsEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	if v := h.verification(t, key, w.ID); v.Status != "pending" || v.Attempts != 0 || v.At == nil || v.NextAttemptAt == nil {
		t.Fatalf("a new webhook's verification: %+v", v)
	}
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall") // held until verified
	h.startWorker(t, h.cfg, "w1")
	v := h.waitVerification(t, key, w.ID, "verified")
	if v.Attempts != 1 || v.At == nil || v.NextAttemptAt != nil || v.Error != nil {
		t.Fatalf("verified: %+v", v)
	}
	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	waitFor(t, "every event delivered", 30*time.Second, func() bool { return len(rc.eventIDs(t)) == 5 })
	vs := rc.verifications()
	if len(vs) != 1 {
		t.Fatalf("%d verification requests, want 1", len(vs))
	}
	checkSignatures(t, w.Secret, vs[0])
	var body struct {
		ID, Type, CreatedAt string
		Data                struct{ WebhookID, Challenge string }
	}
	testenv.Must(t, json.Unmarshal(vs[0].Body, &body), "verification body")
	if body.Type != webhook.VerifyEvent || body.ID != vs[0].Header.Get("webhook-id") || body.Data.WebhookID != w.ID ||
		len(body.Data.Challenge) != 43 || body.CreatedAt == "" {
		t.Fatalf("verification body %s", vs[0].Body)
	}
	for _, d := range rc.deliveries() {
		checkSignatures(t, w.Secret, d)
	}
}

// TestWrongAnswersStayUnverified: answers that do not echo the challenge
// exactly (another value, not JSON, the right value with a non-2xx, the
// right value in a body over the bound) fail after the bounded attempts,
// and no event is delivered; POST /verify starts a new round, which a
// fixed receiver passes.
func TestWrongAnswersStayUnverified(t *testing.T) {
	t.Parallel()
	right := func(body []byte) string {
		a, _ := webhook.ChallengeAnswer(body)
		return string(a)
	}
	cases := map[string]challengeFunc{
		"another value": func([]byte) (int, []byte) { return 200, []byte(`{"challenge":"not-the-one"}`) },
		"not json":      func(b []byte) (int, []byte) { return 200, []byte("challenge accepted") },
		"empty 200":     func([]byte) (int, []byte) { return 200, nil },
		"the request":   func(b []byte) (int, []byte) { return 200, b },
		"500":           func(b []byte) (int, []byte) { return 500, []byte(right(b)) },
		"too long": func(b []byte) (int, []byte) {
			return 200, []byte(strings.TrimSuffix(right(b), "}") + `,"pad":"` + strings.Repeat("x", 5000) + `"}`)
		},
	}
	h := newHarness(t, harnessOpt{})
	h.startWorker(t, h.cfg, "w1")
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := h.key(t, "acme"+strings.ReplaceAll(name, " ", ""))
			var fixed atomic.Bool
			rc := newReceiverWith(t, nil, func(b []byte) (int, []byte) {
				if fixed.Load() {
					return echoChallenge(b)
				}
				return answer(b)
			})
			w := h.create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
			insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
			v := h.waitVerification(t, key, w.ID, "failed")
			if v.Attempts != 1+len(h.cfg.VerifySchedule) || v.Error == nil || v.At == nil {
				t.Fatalf("failed verification: %+v", v)
			}
			if n := len(rc.verifications()); n != v.Attempts {
				t.Fatalf("%d verification requests for %d attempts", n, v.Attempts)
			}
			waitFor(t, "the held delivery failed", 30*time.Second, func() bool {
				return deliveryCounts(t, h, []string{w.ID})["failed"] == 1
			})
			if n := len(rc.deliveries()); n != 0 {
				t.Fatalf("%d events reached an unverified receiver", n)
			}
			fixed.Store(true)
			r := h.do(t, http.MethodPost, "/webhooks/"+w.ID+"/verify", key, nil)
			if r.Status != http.StatusAccepted {
				t.Fatalf("POST verify: %d %s", r.Status, r.Body)
			}
			var out struct {
				Data struct{ Verification verificationView }
			}
			r.JSON(t, &out)
			if v := out.Data.Verification; v.Status != "pending" || v.Attempts != 0 || v.Error != nil {
				t.Fatalf("after POST verify: %+v", v)
			}
			h.waitVerification(t, key, w.ID, "verified")
			insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
			waitFor(t, "an event after the new round", 30*time.Second, func() bool { return len(rc.deliveries()) >= 1 })
		})
	}
}

// TestVerifyRouteRefusesBadInput: a body, another account's webhook, a
// malformed id.
func TestVerifyRouteRefusesBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key, other := h.key(t, "acme"), h.key(t, "other")
	w := h.create(t, key, map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"attestation.created"}})
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
		if r := h.do(t, http.MethodPost, c.path, c.key, c.body); r.Status != c.want {
			t.Errorf("POST %s: %d %s, want %d", c.path, r.Status, r.Body, c.want)
		}
	}
}

// TestPatchURLRestartsVerification: a verified webhook whose URL changes
// is pending again and gets nothing until the new receiver answers; a
// PATCH that keeps the URL keeps the verification.
func TestPatchURLRestartsVerification(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.key(t, "acme")
	first := newReceiver(t, nil)
	second := newReceiverWith(t, nil, noEcho)
	w := h.create(t, key, map[string]any{"url": first.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	h.waitVerification(t, key, w.ID, "verified")
	patch := func(body map[string]any) verificationView {
		r := h.do(t, http.MethodPatch, "/webhooks/"+w.ID, key, body)
		if r.Status != http.StatusOK {
			t.Fatalf("PATCH: %d %s", r.Status, r.Body)
		}
		var out struct {
			Data struct{ Verification verificationView }
		}
		r.JSON(t, &out)
		return out.Data.Verification
	}
	if v := patch(map[string]any{"url": first.URL(), "description": "same URL"}); v.Status != "verified" {
		t.Fatalf("a PATCH keeping the URL: %+v", v)
	}
	if v := patch(map[string]any{"url": second.URL()}); v.Status != "pending" || v.Attempts != 0 || v.Error != nil {
		t.Fatalf("a PATCH changing the URL: %+v", v)
	}
	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	h.waitVerification(t, key, w.ID, "failed")
	waitFor(t, "the held deliveries failed", 30*time.Second, func() bool {
		return deliveryCounts(t, h, []string{w.ID})["failed"] == 2
	})
	if n, m := len(first.deliveries()), len(second.deliveries()); n != 0 || m != 0 {
		t.Fatalf("events after the URL changed: %d at the old receiver, %d at the new one", n, m)
	}
	if n := len(second.verifications()); n != 1+len(h.cfg.VerifySchedule) {
		t.Fatalf("%d verification requests at the new URL", n)
	}
}

// TestHostCapAcrossAccountsAndWorkers: webhooks of several accounts to one
// host, served by two workers, share one cap: in every second the host
// gets at most the cap's rate (plus its burst, and half a second's worth
// of slack for requests granted together but sent apart), verifications
// included, and every event still arrives.
func TestHostCapAcrossAccountsAndWorkers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	cfg := h.cfg
	cfg.HostRate = 20
	rc := newReceiver(t, nil)
	const accounts, perAccount, events = 3, 3, 20
	var hooks []created
	for a := range accounts {
		key := h.key(t, fmt.Sprintf("acct%d", a))
		for range perAccount {
			hooks = append(hooks, h.create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}}))
		}
	}
	insertEvents(t, h.env.Store, events, agentA, "ToolCall")
	h.startWorker(t, cfg, "w1")
	h.startWorker(t, cfg, "w2")
	total := len(hooks) * events
	distinct := func() map[string]int {
		ids := map[string]int{}
		for _, d := range rc.deliveries() {
			ids[d.Header.Get("webhook-id")]++
		}
		return ids
	}
	waitFor(t, "every delivery", 120*time.Second, func() bool { return len(distinct()) == total })
	var at []time.Time
	for _, d := range append(rc.deliveries(), rc.verifications()...) {
		at = append(at, d.At)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	limit := cfg.HostRate + max(1, cfg.HostRate/10) + cfg.HostRate/2
	most, j := 0, 0
	for i := range at {
		for at[i].Sub(at[j]) >= time.Second {
			j++
		}
		most = max(most, i-j+1)
	}
	if most > limit {
		t.Fatalf("%d requests reached the host within one second; the cap is %d/s (at most %d counted with burst and slack)",
			most, cfg.HostRate, limit)
	}
	for id, n := range distinct() {
		if n > 1 {
			t.Logf("delivery %s arrived %d times (at least once: receivers deduplicate on webhook-id)", id, n)
		}
	}
	t.Logf("%d deliveries and %d verifications, at most %d in a second (cap %d/s)", total, len(rc.verifications()), most, cfg.HostRate)
}

// TestRepeatedRestartsAreSpaced: POST /verify as fast as the API answers,
// on a receiver that never echoes, sends it one request per 10 s at most,
// not one per call.
func TestRepeatedRestartsAreSpaced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.key(t, "acme")
	rc := newReceiverWith(t, nil, noEcho)
	cfg := h.cfg
	cfg.VerifySchedule = []time.Duration{time.Hour}
	w := h.create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, cfg, "w1")
	h.startWorker(t, cfg, "w2")
	waitFor(t, "the first verification request", 30*time.Second, func() bool { return len(rc.verifications()) == 1 })
	calls := 0
	for start := time.Now(); time.Since(start) < 3*time.Second; calls++ {
		if r := h.do(t, http.MethodPost, "/webhooks/"+w.ID+"/verify", key, nil); r.Status != http.StatusAccepted {
			t.Fatalf("POST verify: %d %s", r.Status, r.Body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.verifications()); n != 1 {
		t.Fatalf("%d POST /verify within 3 s sent the receiver %d more verification requests, want none before 10 s", calls, n-1)
	}
}
