package webhook_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/gagliardetto/solana-go"
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

// TestVerifiedReceiverGetsEvents: a receiver that echoes the challenge is
// verified at the first request, which is signed as deliveries are; the
// events that happened before and after reach it.
func TestVerifiedReceiverGetsEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	if v := h.verification(t, key, w.ID); v.Status != "pending" || v.Attempts != 0 || v.At == nil || v.NextAttemptAt == nil {
		t.Fatalf("a new webhook's verification: %+v", v)
	}
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	h.startWorker(t, h.cfg, "w1")
	v := h.waitVerification(t, key, w.ID, "verified")
	if v.Attempts != 1 || v.At == nil || v.NextAttemptAt != nil || v.Error != nil {
		t.Fatalf("verified: %+v", v)
	}
	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	testenv.WaitFor(t, "every event delivered", 30*time.Second, func() bool { return len(rc.eventIDs(t)) == 5 })
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
// exactly (another value, not JSON, an empty 200, the request itself, the
// right value in a body over the bound, a 404, a redirect) end the round
// unverified at once, since the receiver answered; no answer that counts
// (a 500, a 429, a 408) is tried again on the schedule first. Either way
// the events are delivered (under the unverified cap); POST /verify starts
// a new round, which a fixed receiver passes.
func TestWrongAnswersStayUnverified(t *testing.T) {
	t.Parallel()
	right := func(body []byte) string {
		a, _ := webhook.ChallengeAnswer(body)
		return string(a)
	}
	cases := map[string]struct {
		answer  challengeFunc
		retried bool
	}{
		"another value": {func([]byte) (int, []byte) { return 200, []byte(`{"challenge":"not-the-one"}`) }, false},
		"not json":      {func(b []byte) (int, []byte) { return 200, []byte("challenge accepted") }, false},
		"empty 200":     {func([]byte) (int, []byte) { return 200, nil }, false},
		"the request":   {func(b []byte) (int, []byte) { return 200, b }, false},
		"404":           {func(b []byte) (int, []byte) { return 404, []byte(right(b)) }, false},
		"redirect":      {func(b []byte) (int, []byte) { return 307, []byte(right(b)) }, false},
		"too long": {func(b []byte) (int, []byte) {
			return 200, []byte(strings.TrimSuffix(right(b), "}") + `,"pad":"` + strings.Repeat("x", 5000) + `"}`)
		}, false},
		"500": {func(b []byte) (int, []byte) { return 500, []byte(right(b)) }, true},
		"429": {func(b []byte) (int, []byte) { return 429, []byte(right(b)) }, true},
		"408": {func(b []byte) (int, []byte) { return 408, []byte(right(b)) }, true},
	}
	h := newHarness(t, harnessOpt{})
	h.startWorker(t, h.cfg, "w1")
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := h.Key(t, "acme"+strings.ReplaceAll(name, " ", ""))
			var fixed atomic.Bool
			rc := newReceiverWith(t, nil, func(b []byte) (int, []byte) {
				if fixed.Load() {
					return echoChallenge(b)
				}
				return c.answer(b)
			})
			// Each case's webhook follows an agent of its own: the cases run
			// side by side, and every webhook gets every event it matches.
			agent := solana.PublicKeyFromBytes(func() []byte { s := sha256.Sum256([]byte(name)); return s[:] }()).String()
			w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"},
				"filter": map[string]any{"agents": []string{agent}}})
			insertEvents(t, h.env.Store, 1, agent, "ToolCall")
			v := h.waitVerification(t, key, w.ID, "unverified")
			attempts := 1
			if c.retried {
				attempts += len(h.cfg.VerifySchedule)
			}
			if v.Attempts != attempts || v.Error == nil || v.At == nil || v.NextAttemptAt != nil {
				t.Fatalf("unverified: %+v, want %d attempts", v, attempts)
			}
			if n := len(rc.verifications()); n != v.Attempts {
				t.Fatalf("%d verification requests for %d attempts", n, v.Attempts)
			}
			testenv.WaitFor(t, "the event delivered all the same", 30*time.Second, func() bool {
				return deliveryCounts(t, h, []string{w.ID})["succeeded"] == 1 && len(rc.deliveries()) == 1
			})
			fixed.Store(true) // the new round's request goes 10 s after the last round ended at the soonest
			r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/verify", key, nil)
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
			insertEvents(t, h.env.Store, 1, agent, "ToolCall")
			testenv.WaitFor(t, "an event after the new round", 30*time.Second, func() bool { return len(rc.deliveries()) >= 2 })
		})
	}
}

// TestPatchURLRestartsVerification: a verified webhook whose URL changes
// is pending again (under the unverified cap) until the new receiver
// answers, and its events go to the new URL all the same; a PATCH that
// keeps the URL keeps the verification.
func TestPatchURLRestartsVerification(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	first := newReceiver(t, nil)
	second := newReceiverWith(t, nil, noEcho)
	w := h.Create(t, key, map[string]any{"url": first.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	h.waitVerification(t, key, w.ID, "verified")
	patch := func(body map[string]any) verificationView {
		r := h.Do(t, http.MethodPatch, "/webhooks/"+w.ID, key, body)
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
	testenv.WaitFor(t, "the events at the new URL", 30*time.Second, func() bool { return len(second.deliveries()) == 2 })
	h.waitVerification(t, key, w.ID, "unverified")
	if n := len(first.deliveries()); n != 0 {
		t.Fatalf("%d events at the old receiver after the URL changed", n)
	}
	if n := len(second.verifications()); n != 1 {
		t.Fatalf("%d verification requests at the new URL, want 1 (it answered)", n)
	}
}

// TestHostCapAcrossAccountsAndWorkers: verified webhooks of several
// accounts to one host, served by two workers, share one cap: in every
// second the host gets at most the cap's rate (plus its burst, and what
// is sent late on its turn), and every event still arrives.
func TestHostCapAcrossAccountsAndWorkers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	cfg := h.cfg
	cfg.HostRate = 20
	rc := newReceiver(t, nil)
	const accounts, perAccount, events = 3, 3, 20
	type made struct{ key, id string }
	var hooks []made
	for a := range accounts {
		key := h.Key(t, fmt.Sprintf("acct%d", a))
		for range perAccount {
			hooks = append(hooks, made{key, h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}}).ID})
		}
	}
	h.startWorker(t, cfg, "w1")
	h.startWorker(t, cfg, "w2")
	for _, c := range hooks {
		h.waitVerification(t, c.key, c.id, "verified")
	}
	insertEvents(t, h.env.Store, events, agentA, "ToolCall")
	total := len(hooks) * events
	distinct := func() map[string]int {
		ids := map[string]int{}
		for _, d := range rc.deliveries() {
			ids[d.Header.Get("webhook-id")]++
		}
		return ids
	}
	testenv.WaitFor(t, "every delivery", 120*time.Second, func() bool { return len(distinct()) == total })
	var at []time.Time
	for _, d := range rc.deliveries() {
		at = append(at, d.At)
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	limit := int(float64(cfg.HostRate)*(time.Second+2*time.Second+100*time.Millisecond).Seconds()) + max(1, cfg.HostRate/10)
	most := mostWithin(at, time.Second)
	if most > limit {
		t.Fatalf("%d requests reached the host within one second; the cap is %d/s (at most %d counted with burst and lateness)",
			most, cfg.HostRate, limit)
	}
	span := at[len(at)-1].Sub(at[0])
	if n := int(float64(cfg.HostRate)*(span+2*time.Second+100*time.Millisecond).Seconds()) + max(1, cfg.HostRate/10); len(at) > n {
		t.Fatalf("%d requests reached the host in %s; the cap of %d/s allows %d", len(at), span, cfg.HostRate, n)
	}
	for id, n := range distinct() {
		if n > 1 {
			t.Logf("delivery %s arrived %d times (at least once: receivers deduplicate on webhook-id)", id, n)
		}
	}
	t.Logf("%d deliveries in %s, at most %d in a second (cap %d/s)", total, span.Round(time.Millisecond), most, cfg.HostRate)
}

// TestRepeatedRestartsAreSpaced: POST /verify as fast as the API answers,
// on a receiver that answers at once without the challenge (each round
// ends unverified at once), sends it one request per 10 s at most, not
// one per call.
func TestRepeatedRestartsAreSpaced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiverWith(t, nil, noEcho)
	cfg := h.cfg
	cfg.VerifySchedule = []time.Duration{time.Hour}
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, cfg, "w1")
	h.startWorker(t, cfg, "w2")
	testenv.WaitFor(t, "the first verification request", 30*time.Second, func() bool { return len(rc.verifications()) == 1 })
	calls := 0
	for start := time.Now(); time.Since(start) < 3*time.Second; calls++ {
		if r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/verify", key, nil); r.Status != http.StatusAccepted {
			t.Fatalf("POST verify: %d %s", r.Status, r.Body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(rc.verifications()); n != 1 {
		t.Fatalf("%d POST /verify within 3 s sent the receiver %d more verification requests, want none before 10 s", calls, n-1)
	}
}
