package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhookapi"
)

// This file tests issue 26: recovery by time window, secret rotation with
// overlap, v1a signatures, receivers that say stop (410, Retry-After),
// per-endpoint rate limits, the event catalog and the ordering guarantee.

// verifiedHook creates a webhook to rc and waits for its verification.
func (h *harness) verifiedHook(t *testing.T, key string, rc *receiver, events ...string) created {
	t.Helper()
	if len(events) == 0 {
		events = []string{"attestation.created"}
	}
	c := h.Create(t, key, map[string]any{"url": rc.URL(), "events": events})
	h.waitVerification(t, key, c.ID, "verified")
	return c
}

// nodeVerdicts runs testdata/standardwebhooks/verify.js over deliveries:
// for each, whether each secret's Standard Webhooks verifier (the npm
// library) accepts it, and whether a v1a entry verifies with publicKey
// (Node's Ed25519).
func nodeVerdicts(t *testing.T, secrets []string, publicKey string, ds []delivery) []map[string]bool {
	t.Helper()
	dir := filepath.Join("testdata", "standardwebhooks")
	modules := testenv.NodeModules(t, dir)
	type in struct {
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	input := struct {
		Secrets    []string `json:"secrets"`
		PublicKey  string   `json:"publicKey"`
		Deliveries []in     `json:"deliveries"`
	}{Secrets: secrets, PublicKey: publicKey}
	for _, d := range ds {
		hs := map[string]string{}
		for k := range d.Header {
			hs[strings.ToLower(k)] = d.Header.Get(k)
		}
		input.Deliveries = append(input.Deliveries, in{Headers: hs, Body: string(d.Body)})
	}
	b, err := json.Marshal(input)
	testenv.Must(t, err, "encode")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "verify.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify.js: %v\n%s", err, stderr.String())
	}
	var verdicts []map[string]bool
	testenv.Must(t, json.Unmarshal(out, &verdicts), "verdicts %s", out)
	if len(verdicts) != len(ds) {
		t.Fatalf("verify.js: %d verdicts for %d deliveries", len(verdicts), len(ds))
	}
	return verdicts
}

// TestRotationOverlap: after a rotation, a receiver holding only the old
// secret and one holding only the new both verify every delivery (with
// the npm standardwebhooks library) until the overlap ends; after it only
// the new verifies, and x-service-signature switches to the new secret.
func TestRotationOverlap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("rotate"))
	rc := newReceiver(t, nil)
	h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)

	insertEvents(t, h.env.Store, 2, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries before the rotation", 30*time.Second, func() bool { return len(rc.deliveries()) >= 2 })

	const overlap = 4
	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/rotate-secret", key, map[string]any{"overlapSeconds": overlap})
	if r.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	var rot struct{ Data webhookView }
	r.JSON(t, &rot)
	newSecret := rot.Data.Secret
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == c.Secret || rot.Data.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotation answer: %+v", rot.Data)
	}
	expires, err := time.Parse(time.RFC3339, *rot.Data.PreviousSecretExpiresAt)
	testenv.Must(t, err, "previousSecretExpiresAt")
	if got := h.Webhook(t, key, c.ID); got.Secret != "" || got.PreviousSecretExpiresAt == nil {
		t.Fatalf("the secret is shown once; the overlap on the record: %+v", got)
	}

	before := len(rc.deliveries())
	insertEvents(t, h.env.Store, 5, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries during the overlap", 30*time.Second, func() bool { return len(rc.deliveries()) >= before+5 })
	time.Sleep(time.Until(expires.Add(1500 * time.Millisecond))) // the overlap is over
	mid := len(rc.deliveries())
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries after the overlap", 30*time.Second, func() bool { return len(rc.deliveries()) >= mid+3 })

	ds := rc.deliveries()
	verdicts := nodeVerdicts(t, []string{c.Secret, newSecret}, "", ds)
	during, after := 0, 0
	for i, d := range ds {
		ts, _ := strconv.ParseInt(d.Header.Get("webhook-timestamp"), 10, 64)
		sent := time.Unix(ts, 0)
		v := verdicts[i]
		switch {
		case i < before: // before the rotation: the old secret
			if !v[c.Secret] {
				t.Errorf("delivery %d (before the rotation) does not verify with the old secret", i)
			}
		case i < mid && sent.Before(expires.Add(-time.Second)): // within the overlap
			during++
			if !v[c.Secret] || !v[newSecret] {
				t.Errorf("delivery %d (overlap) verifies old=%v new=%v; want both (signature %q)", i, v[c.Secret], v[newSecret],
					d.Header.Get("webhook-signature"))
			}
			if n := len(strings.Fields(d.Header.Get("webhook-signature"))); n != 2 {
				t.Errorf("delivery %d (overlap): %d signatures, want 2", i, n)
			}
			checkService(t, c.Secret, d) // the legacy header keeps the old secret
		case i >= mid:
			after++
			if v[c.Secret] || !v[newSecret] {
				t.Errorf("delivery %d (after the overlap) verifies old=%v new=%v; want only the new", i, v[c.Secret], v[newSecret])
			}
			checkSignatures(t, newSecret, d)
		}
	}
	if during < 5 || after < 3 {
		t.Fatalf("deliveries checked: %d during the overlap (want 5), %d after (want 3)", during, after)
	}
	if got := h.Webhook(t, key, c.ID); got.PreviousSecretExpiresAt != nil {
		t.Errorf("after the overlap previousSecretExpiresAt is %v, want null", *got.PreviousSecretExpiresAt)
	}
}

// checkService checks x-service-signature against secret.
func checkService(t *testing.T, secret string, d delivery) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.Body)
	if got, want := d.Header.Get("x-service-signature"), "sha256="+hex.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("x-service-signature %q, want %q", got, want)
	}
}

// TestV1aSignatures: signatureScheme both adds an Ed25519 entry that
// Node's own Ed25519 verifies with the webhook's published key; v1a alone
// drops the HMAC entries and x-service-signature.
func TestV1aSignatures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("v1a"))
	rc := newReceiver(t, nil)
	h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)

	// A refused PATCH changes nothing: not even the key pair v1a needs.
	if r := h.Do(t, http.MethodPatch, "/webhooks/"+c.ID, key, map[string]any{"signatureScheme": "both", "url": "ftp://example.com/x"}); r.Status != http.StatusBadRequest {
		t.Fatalf("PATCH with a refused url: %d %s", r.Status, r.Body)
	}
	var sealed []byte
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), "SELECT ed25519_sealed FROM webhooks WHERE id = $1", c.ID).Scan(&sealed), "read key")
	if sealed != nil {
		t.Fatal("a refused PATCH made the webhook an Ed25519 key")
	}

	v := h.Patch(t, key, c.ID, map[string]any{"signatureScheme": "both"})
	if v.SignatureScheme != "both" || v.PublicKey == nil || !strings.HasPrefix(*v.PublicKey, "whpk_") {
		t.Fatalf("after PATCH both: %+v", v)
	}
	pub := *v.PublicKey
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries signed both ways", 30*time.Second, func() bool { return len(rc.deliveries()) >= 3 })

	if v2 := h.Patch(t, key, c.ID, map[string]any{"signatureScheme": "v1a"}); v2.PublicKey == nil || *v2.PublicKey != pub {
		t.Fatalf("the key pair is kept: %+v", v2)
	}
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	testenv.WaitFor(t, "deliveries signed v1a", 30*time.Second, func() bool { return len(rc.deliveries()) >= 6 })

	ds := rc.deliveries()
	verdicts := nodeVerdicts(t, []string{c.Secret}, pub, ds)
	for i, d := range ds {
		sig := d.Header.Get("webhook-signature")
		if i < 3 {
			if !verdicts[i]["v1a"] || !verdicts[i][c.Secret] || !strings.Contains(sig, "v1,") || d.Header.Get("x-service-signature") == "" {
				t.Errorf("delivery %d (both): v1a=%v v1=%v signature %q", i, verdicts[i]["v1a"], verdicts[i][c.Secret], sig)
			}
			continue
		}
		if !verdicts[i]["v1a"] || verdicts[i][c.Secret] || strings.Contains(sig, "v1,") || d.Header.Get("x-service-signature") != "" {
			t.Errorf("delivery %d (v1a): v1a=%v v1=%v signature %q service %q", i, verdicts[i]["v1a"], verdicts[i][c.Secret], sig,
				d.Header.Get("x-service-signature"))
		}
	}
	// A tampered body fails Node's Ed25519 check (the test checks something).
	bad := ds[len(ds)-1]
	bad.Body = append(append([]byte(nil), bad.Body...), ' ')
	if nodeVerdicts(t, nil, pub, []delivery{bad})[0]["v1a"] {
		t.Fatal("a tampered body verified")
	}
	if v3 := h.Patch(t, key, c.ID, map[string]any{"signatureScheme": "v1"}); v3.PublicKey != nil {
		t.Errorf("v1: publicKey %v, want null", *v3.PublicKey)
	}
}

// TestGoneDisablesAndTellsTheOthers: a receiver answering 410 Gone
// deactivates its webhook (visible in the list), and the account's other
// active webhook gets a webhook.disabled event naming it.
func TestGoneDisablesAndTellsTheOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("gone"))
	gone := newReceiver(t, func(int, *http.Request) int { return http.StatusGone })
	other := newReceiver(t, nil)
	h.startWorker(t, h.cfg, "w1")
	g := h.verifiedHook(t, key, gone)
	o := h.verifiedHook(t, key, other, "agent.revoked") // not subscribed to attestations: still told

	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	testenv.WaitFor(t, "the 410 webhook deactivated", 30*time.Second, func() bool { return !h.Webhook(t, key, g.ID).Active })
	if r := h.Webhook(t, key, g.ID).DisabledReason; r == nil || !strings.Contains(*r, "410") {
		t.Errorf("disabledReason %v", deref(r))
	}
	r := h.Do(t, http.MethodGet, "/webhooks", key, nil)
	var list struct{ Data []webhookView }
	r.JSON(t, &list)
	for _, w := range list.Data {
		if w.ID == g.ID && w.Active || w.ID == o.ID && !w.Active {
			t.Errorf("list: %+v", w)
		}
	}
	testenv.WaitFor(t, "webhook.disabled at the other receiver", 30*time.Second, func() bool { return len(other.deliveries()) >= 1 })
	d := other.deliveries()[0]
	checkSignatures(t, o.Secret, d)
	var ev struct {
		Type string
		Data webhookapi.WebhookDisabledData
	}
	dec := json.NewDecoder(bytes.NewReader(d.Body))
	testenv.Must(t, json.Unmarshal(d.Body, &ev), "decode")
	if ev.Type != store.EventWebhookDisabled || ev.Data.WebhookID != g.ID || ev.Data.URL != gone.URL() || !strings.Contains(ev.Data.Reason, "410") {
		t.Fatalf("webhook.disabled event: %s", d.Body)
	}
	checkAgainstCatalog(t, dec)
	if n := len(gone.deliveries()); n != 1 {
		t.Errorf("the 410 receiver got %d requests, want 1", n)
	}
}

// checkAgainstCatalog decodes a delivery body strictly into its catalog
// data type.
func checkAgainstCatalog(t *testing.T, dec *json.Decoder) {
	t.Helper()
	var env struct {
		ID, Type, CreatedAt string
		Data                json.RawMessage
	}
	testenv.Must(t, dec.Decode(&env), "envelope")
	var target any
	switch env.Type {
	case store.EventWebhookDisabled:
		target = &webhookapi.WebhookDisabledData{}
	case store.EventWebhookTest:
		target = &webhookapi.WebhookTestData{}
	default:
		return
	}
	d := json.NewDecoder(bytes.NewReader(env.Data))
	d.DisallowUnknownFields()
	if err := d.Decode(target); err != nil {
		t.Errorf("%s data %s does not decode into its catalog type: %v", env.Type, env.Data, err)
	}
}

// TestRetryAfterDelaysTheNextAttempt: 429, 502 and 504 with Retry-After
// (seconds or an HTTP date) put the next attempt at least that far off,
// though the schedule says 50 ms.
func TestRetryAfterDelaysTheNextAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("retryafter"))
	type tc struct {
		status int
		header func() string
		wait   time.Duration
	}
	cases := []tc{
		{http.StatusBadGateway, func() string { return "2" }, 2 * time.Second},
		{http.StatusGatewayTimeout, func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 2 * time.Second},
		{http.StatusTooManyRequests, func() string { return "2" }, 2 * time.Second},
	}
	var rcs []*receiver
	var hooks []created
	h.startWorker(t, h.cfg, "w1")
	for _, c := range cases {
		status, header := c.status, c.header
		rc := newReceiver(t, func(n int, r *http.Request) int {
			if n == 1 {
				return status
			}
			return http.StatusNoContent
		})
		rc.headers = func(n int, h http.Header) {
			if n == 1 {
				h.Set("Retry-After", header())
			}
		}
		rcs = append(rcs, rc)
		hooks = append(hooks, h.verifiedHook(t, key, rc))
	}
	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	for i, rc := range rcs {
		testenv.WaitFor(t, fmt.Sprintf("case %d: the second attempt", i), 30*time.Second, func() bool { return len(rc.deliveries()) >= 2 })
		ds := rc.deliveries()
		if gap := ds[1].At.Sub(ds[0].At); gap < cases[i].wait-100*time.Millisecond {
			t.Errorf("case %d (%d): the second attempt came %s after the first, want >= %s", i, cases[i].status, gap, cases[i].wait)
		}
		var log []attemptView
		testenv.WaitFor(t, "both attempts logged", 30*time.Second, func() bool { log, _ = h.log(t, key, hooks[i].ID, ""); return len(log) >= 2 })
		if log[len(log)-1].StatusCode == nil || *log[len(log)-1].StatusCode != cases[i].status {
			t.Errorf("case %d: log %+v", i, log)
		}
	}
}

// TestOwnRateLimit: rateLimitPerSecond holds across two workers: 200
// events queued at once are never delivered faster than the rate (the
// run from the first arrival to the last is at least 90% of what the
// rate allows). A loaded machine only makes the run longer, so that side
// is not judged by the clock here: the schedule's pace (turns exactly
// 1/rate apart) is TestOwnRateTakesTurns's, the throughput bench/webhook's.
func TestOwnRateLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("ratelimit"))
	rc := newReceiver(t, nil)
	h.startWorker(t, h.cfg, "w1")
	h.startWorker(t, h.cfg, "w2")
	c := h.verifiedHook(t, key, rc)
	const rate, events = 20, 200
	if v := h.Patch(t, key, c.ID, map[string]any{"rateLimitPerSecond": rate}); v.RateLimitPerSecond == nil || *v.RateLimitPerSecond != rate {
		t.Fatalf("after PATCH: %+v", v)
	}
	insertEvents(t, h.env.Store, events, agentA, "ToolCall")
	distinct := func() int {
		seen := map[string]bool{}
		for _, d := range rc.deliveries() {
			id, _ := d.event(t)
			seen[id] = true
		}
		return len(seen)
	}
	testenv.WaitFor(t, "every event delivered", 60*time.Second, func() bool { return distinct() >= events })
	ds := rc.deliveries()
	span := ds[len(ds)-1].At.Sub(ds[0].At)
	want := time.Duration(len(ds)-1) * time.Second / rate
	perSecond := make([]int, int(span/time.Second)+1)
	for _, d := range ds {
		perSecond[int(d.At.Sub(ds[0].At)/time.Second)]++
	}
	if span < want*9/10 {
		t.Fatalf("%d deliveries (%d events) took %s at %d/s: faster than the rate allows (%s at least; per second: %v)",
			len(ds), events, span.Round(time.Millisecond), rate, want*9/10, perSecond)
	}
	t.Logf("%d deliveries in %s (limit %d/s; per second: %v)", len(ds), span.Round(time.Millisecond), rate, perSecond)
}

// TestNoOrdering: the documented guarantee is none, and no head-of-line
// blocking: while an event's delivery keeps failing, a later event of the
// same agent to the same webhook is delivered; the earlier one arrives
// once its receiver accepts it. Event ids follow the write order, for
// receivers that need to order.
func TestNoOrdering(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("order"))
	var refuse atomic.Value // the event id refused while set
	refuse.Store("")
	var rc *receiver
	rc = newReceiver(t, func(n int, r *http.Request) int {
		id, _ := rc.deliveries()[n-1].event(t)
		if id == refuse.Load().(string) {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	cfg := h.cfg
	cfg.Schedule = []time.Duration{300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond,
		300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}
	h.startWorker(t, cfg, "w1")
	h.verifiedHook(t, key, rc)
	refuse.Store(webhook.EventID(0)) // set below, before the event exists
	ids := insertEventsRefused(t, h, &refuse)
	first := webhook.EventID(ids[0])
	testenv.WaitFor(t, "a failed attempt of the first event", 30*time.Second, func() bool { return len(rc.deliveries()) >= 1 })
	if id, _ := rc.deliveries()[0].event(t); id != first {
		t.Fatalf("first request carried %s, want %s", id, first)
	}
	ids = append(ids, insertEvents(t, h.env.Store, 1, agentA, "ToolCall")...)
	second := webhook.EventID(ids[1])
	testenv.WaitFor(t, "the second event", 30*time.Second, func() bool { return rc.eventIDs(t)[second] >= 1 })
	if ids[0] >= ids[1] {
		t.Fatalf("event ids do not follow the write order: %v", ids)
	}
	refuse.Store("")
	testenv.WaitFor(t, "the first event, accepted", 30*time.Second, func() bool {
		st, err := h.env.Store.Pool().Query(context.Background(), `SELECT 1 FROM webhook_deliveries WHERE outbox_id = $1 AND status = 'succeeded'`, ids[0])
		testenv.Must(t, err, "status")
		defer st.Close()
		return st.Next()
	})
}

// insertEventsRefused inserts one event, refusing it from the start: the
// id is the sequence's next value, set before the row is written.
func insertEventsRefused(t *testing.T, h *harness, refuse *atomic.Value) []int64 {
	t.Helper()
	var next int64
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), `SELECT nextval(pg_get_serial_sequence('outbox', 'id'))`).Scan(&next), "nextval")
	refuse.Store(webhook.EventID(next))
	_, err := h.env.Store.Pool().Exec(context.Background(), `INSERT INTO outbox (id, event_type, payload)
		VALUES ($1::bigint, 'attestation.created', jsonb_build_object('pda', 'p' || $3::text, 'agentPda', $2::text, 'actionType', 'ToolCall', 'slot', 1))`,
		next, agentA, strconv.FormatInt(next, 10))
	testenv.Must(t, err, "insert")
	return []int64{next}
}
