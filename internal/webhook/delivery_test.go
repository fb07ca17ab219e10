package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
	"github.com/attestd/attestd/internal/webhookapi"
)

func TestDeliversSignedEventsToMatchingWebhooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	before := insertEvents(t, h.env.Store, 1, agentA, "ToolCall") // older than every webhook: never delivered
	all, filtered := newReceiver(t, nil), newReceiver(t, nil)
	wAll := h.Create(t, key, map[string]any{"url": all.URL(), "events": webhook.Events})
	wF := h.Create(t, key, map[string]any{"url": filtered.URL(), "events": []string{"attestation.created", "agent.revoked"},
		"filter": map[string]any{"agents": []string{agentA}, "actionTypes": []string{"ToolCall"}}})
	h.startWorker(t, h.cfg, "w1")

	match := insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	other := append(insertEvents(t, h.env.Store, 2, agentA, "Decision"), insertEvents(t, h.env.Store, 2, agentB, "ToolCall")...)
	var revoked, registered int64
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), `INSERT INTO outbox (event_type, payload)
		VALUES ('agent.revoked', jsonb_build_object('pda', $1::text, 'revokedAt', '2026-11-21T10:00:00Z')) RETURNING id`, agentA).Scan(&revoked), "revoked")
	testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), `INSERT INTO outbox (event_type, payload)
		VALUES ('agent.registered', jsonb_build_object('pda', $1::text)) RETURNING id`, agentB).Scan(&registered), "registered")

	ids := func(ns ...[]int64) map[string]bool {
		out := map[string]bool{}
		for _, n := range ns {
			for _, id := range n {
				out[webhook.EventID(id)] = true
			}
		}
		return out
	}
	wantAll := ids(match, other, []int64{revoked, registered})
	wantF := ids(match, []int64{revoked})
	testenv.WaitFor(t, "every delivery", testenv.Patience, func() bool {
		return len(all.eventIDs(t)) >= len(wantAll) && len(filtered.eventIDs(t)) >= len(wantF)
	})
	for rc, want := range map[*receiver]map[string]bool{all: wantAll, filtered: wantF} {
		got := rc.eventIDs(t)
		if len(got) != len(want) {
			t.Errorf("received %v, want %v", got, want)
		}
		for id := range want {
			if got[id] == 0 {
				t.Errorf("event %s not received", id)
			}
		}
	}
	if all.eventIDs(t)[webhook.EventID(before[0])] != 0 {
		t.Error("an event older than the webhook was delivered")
	}
	for rc, secret := range map[*receiver]string{all: wAll.Secret, filtered: wF.Secret} {
		for _, d := range rc.deliveries() {
			checkSignatures(t, secret, d)
			var body map[string]json.RawMessage
			testenv.Must(t, json.Unmarshal(d.Body, &body), "body")
			// SPEC's four members, and for attestation.created the link
			// to its proof (log), nothing else.
			members := 4
			if id, typ := d.event(t); typ == "attestation.created" {
				members = 5
				var l webhook.LogLink
				if err := json.Unmarshal(body["log"], &l); err != nil || l.State == "" ||
					!strings.HasSuffix(l.Proof, "/proof?format=tlog-proof") {
					t.Errorf("event %s: log member %s", id, body["log"])
				}
			}
			if len(body) != members || body["id"] == nil || body["type"] == nil || body["createdAt"] == nil || body["data"] == nil {
				t.Errorf("body %s: want exactly id, type, createdAt, data (and log for attestation.created)", d.Body)
			}
			if ct := d.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
		}
	}
	// The log: one succeeded attempt per delivery, whose id is the
	// webhook-id the receiver got.
	sent := map[string]string{} // webhook-id -> event id
	for _, d := range all.deliveries() {
		id, _ := d.event(t)
		sent[d.Header.Get("webhook-id")] = id
	}
	testenv.WaitFor(t, "the log", testenv.Patience, func() bool { _, n := h.log(t, key, wAll.ID, ""); return n >= len(wantAll) })
	entries, total := h.log(t, key, wAll.ID, "?limit=100")
	if total != len(wantAll) {
		t.Errorf("log has %d attempts, want %d", total, len(wantAll))
	}
	for _, e := range entries {
		if !e.Succeeded || e.DeliveryStatus != "succeeded" || e.Attempt != 1 || e.StatusCode == nil || *e.StatusCode != 204 ||
			sent[e.DeliveryID] != e.EventID || e.Error != nil || e.NextAttemptAt != nil {
			t.Errorf("log entry %+v (sent %v)", e, sent[e.DeliveryID])
		}
	}
	one, n := h.log(t, key, wAll.ID, "?deliveryId="+entries[0].DeliveryID)
	if n != 1 || len(one) != 1 || one[0].DeliveryID != entries[0].DeliveryID {
		t.Errorf("log filtered by delivery: %d %+v", n, one)
	}
	// Pages of two, each after the last one's cursor, walk the same log
	// in the same order, and the last page names no cursor.
	var walked []string
	for query, pages := "?limit=2", 0; ; pages++ {
		if pages > len(entries) {
			t.Fatalf("cursor paging does not end: %d pages", pages)
		}
		r := h.Do(t, http.MethodGet, "/webhooks/"+wAll.ID+"/deliveries"+query, key, nil)
		var page struct {
			Data       []attemptView
			Pagination struct{ NextCursor string }
		}
		r.JSON(t, &page)
		for _, e := range page.Data {
			walked = append(walked, e.DeliveryID)
		}
		if page.Pagination.NextCursor == "" {
			break
		}
		query = "?limit=2&cursor=" + page.Pagination.NextCursor
	}
	if len(walked) != len(entries) {
		t.Fatalf("cursor pages listed %d attempts, the log has %d", len(walked), len(entries))
	}
	for i, e := range entries {
		if walked[i] != e.DeliveryID {
			t.Fatalf("cursor page entry %d is %s, the log's is %s", i, walked[i], e.DeliveryID)
		}
	}
}

func TestRetriesUntilTheReceiverAccepts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n <= 2 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	ev := insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	testenv.WaitFor(t, "three attempts", 30*time.Second, func() bool { return len(rc.deliveries()) >= 3 })
	ds := rc.deliveries()
	for i, d := range ds {
		checkSignatures(t, w.Secret, d)
		if d.Header.Get("webhook-id") != ds[0].Header.Get("webhook-id") || string(d.Body) != string(ds[0].Body) {
			t.Errorf("attempt %d: another webhook-id or body", i+1)
		}
		if id, _ := d.event(t); id != webhook.EventID(ev[0]) {
			t.Errorf("attempt %d carries %s", i+1, id)
		}
	}
	testenv.WaitFor(t, "the log", testenv.Patience, func() bool {
		e, n := h.log(t, key, w.ID, "")
		return n == 3 && e[0].DeliveryStatus == "succeeded"
	})
	entries, _ := h.log(t, key, w.ID, "")
	sort.Slice(entries, func(i, j int) bool { return entries[i].Attempt < entries[j].Attempt })
	for i, e := range entries {
		wantOK := i == 2
		if e.Attempt != i+1 || e.Succeeded != wantOK || e.DeliveryID != ds[0].Header.Get("webhook-id") || e.DeliveryStatus != "succeeded" {
			t.Errorf("attempt %d: %+v", i+1, e)
		}
		if !wantOK && (e.StatusCode == nil || *e.StatusCode != 500 || e.NextAttemptAt == nil || e.Error == nil ||
			!strings.Contains(*e.Error, "500")) {
			t.Errorf("failed attempt %d: %+v", i+1, e)
		}
		if e.Response != fmt.Sprintf("answer %d", i+1) {
			t.Errorf("attempt %d response %q", i+1, e.Response)
		}
	}
}

func TestFailedDeliveryManualRetryAndTestEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	var up atomic.Bool
	rc := newReceiver(t, func(int, *http.Request) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	attempts := len(h.cfg.Schedule) + 1
	testenv.WaitFor(t, "the delivery to fail", 30*time.Second, func() bool {
		e, n := h.log(t, key, w.ID, "")
		return n == attempts && e[0].DeliveryStatus == "failed"
	})
	entries, _ := h.log(t, key, w.ID, "")
	if entries[0].Attempt != attempts || entries[0].NextAttemptAt != nil {
		t.Fatalf("last attempt %+v", entries[0])
	}
	// No retry after the schedule ran out.
	if n := len(rc.deliveries()); n != attempts {
		t.Fatalf("receiver got %d requests, want %d", n, attempts)
	}

	up.Store(true)
	did := entries[0].DeliveryID
	r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/deliveries/"+did+"/retry", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, "the manual retry", 30*time.Second, func() bool {
		e, _ := h.log(t, key, w.ID, "")
		return e[0].Manual && e[0].Succeeded && e[0].DeliveryStatus == "succeeded"
	})
	last := rc.deliveries()[attempts]
	if last.Header.Get("webhook-id") != did {
		t.Fatalf("manual retry sent webhook-id %s, want %s", last.Header.Get("webhook-id"), did)
	}
	checkSignatures(t, w.Secret, last)

	// A test event, even to a deactivated webhook; but no retry to one.
	h.Do(t, http.MethodPatch, "/webhooks/"+w.ID, key, map[string]any{"active": false})
	if r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/deliveries/"+did+"/retry", key, nil); r.Status != http.StatusConflict ||
		r.ErrorCode() != webhookapi.CodeWebhookInactive {
		t.Fatalf("retry to an inactive webhook: %d %s", r.Status, r.Body)
	}
	r = h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/test", key, nil)
	var q struct{ Data webhookapi.QueuedView }
	r.JSON(t, &q)
	if r.Status != http.StatusAccepted || q.Data.EventType != "webhook.test" {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, "the test event", 30*time.Second, func() bool {
		for _, d := range rc.deliveries() {
			if _, typ := d.event(t); typ == "webhook.test" {
				checkSignatures(t, w.Secret, d)
				return d.Header.Get("webhook-id") == q.Data.DeliveryID
			}
		}
		return false
	})
}

func TestFailingWebhooksAreDeactivated(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.DisableAfter = 500 * time.Millisecond
	cfg.Schedule = []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond,
		200 * time.Millisecond, 200 * time.Millisecond}
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "acme")
	failing := newReceiver(t, func(int, *http.Request) int { return http.StatusBadGateway })
	gone := newReceiver(t, func(int, *http.Request) int { return http.StatusGone })
	wf := h.Create(t, key, map[string]any{"url": failing.URL(), "events": []string{"attestation.created"}})
	wg := h.Create(t, key, map[string]any{"url": gone.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, cfg, "w1")
	insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	get := func(id string) webhookapi.View {
		var v struct{ Data webhookapi.View }
		h.Do(t, http.MethodGet, "/webhooks/"+id, key, nil).JSON(t, &v)
		return v.Data
	}
	testenv.WaitFor(t, "both deactivated", 30*time.Second, func() bool { return !get(wf.ID).Active && !get(wg.ID).Active })
	if v := get(wf.ID); v.DisabledReason == nil || !strings.Contains(*v.DisabledReason, "every delivery failed since") ||
		v.DisabledAt == nil || v.FailingSince == nil {
		t.Errorf("failing webhook: %+v", v)
	}
	if v := get(wg.ID); v.DisabledReason == nil || !strings.Contains(*v.DisabledReason, "410") {
		t.Errorf("gone webhook: %+v", v)
	}
	// Nothing stays pending, and no more requests come.
	testenv.WaitFor(t, "no pending delivery", testenv.Patience, func() bool {
		var n int
		testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&n), "count")
		return n == 0
	})
	if n := len(gone.deliveries()); n > 3 {
		t.Errorf("the 410 receiver got %d requests (one per delivery at most)", n)
	}
}

// TestSlowReceiverDoesNotDelayHealthyOnes: a receiver that hangs holds at
// most its share of senders; a healthy receiver gets every event while
// the slow one is still hanging.
func TestSlowReceiverDoesNotDelayHealthyOnes(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Timeout = time.Minute
	cfg.Concurrency, cfg.EndpointConcurrency = 8, 2
	cfg.Partitions = 8 // idle partitions too, which must not sit on the worker's room
	h := newHarness(t, harnessOpt{cfg: &cfg})
	key := h.Key(t, "acme")
	release := make(chan struct{})
	var hanging atomic.Int64
	slow := newReceiver(t, func(int, *http.Request) int {
		hanging.Add(1)
		<-release
		return http.StatusOK
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	healthy := newReceiver(t, nil)
	h.Create(t, key, map[string]any{"url": slow.URL(), "events": []string{"attestation.created"}})
	h.Create(t, key, map[string]any{"url": healthy.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, cfg, "w1")
	const n = 60
	insertEvents(t, h.env.Store, n, agentA, "ToolCall")
	// Each healthy delivery takes a millisecond; half the delivery
	// timeout is room for a loaded machine, not for waiting on the slow
	// receiver (its requests hang until released, after this wait, or
	// until that timeout ends them).
	testenv.WaitFor(t, "every event at the healthy receiver", cfg.Timeout/2, func() bool { return len(healthy.eventIDs(t)) == n })
	if got := hanging.Load(); got > int64(cfg.EndpointConcurrency) {
		t.Fatalf("%d requests hang at the slow receiver, more than its %d senders", got, cfg.EndpointConcurrency)
	}
	close(release)
	testenv.WaitFor(t, "every event at the slow receiver", 60*time.Second, func() bool { return len(slow.eventIDs(t)) == n })
}

// TestDialTimeGuard: webhooks stored while loopback was allowed (or whose
// name now resolves to loopback) are refused when the delivery connects,
// by a worker that does not allow loopback; the receiver gets nothing and
// the attempt says why.
func TestDialTimeGuard(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{}) // the API allows loopback
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	port := rc.srv.URL[strings.LastIndexByte(rc.srv.URL, ':')+1:]
	var hooks []created
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "[::1]"} {
		hooks = append(hooks, h.Create(t, key, map[string]any{"url": "http://" + host + ":" + port + "/hook", "events": []string{"attestation.created"}}))
	}
	// Their endpoints were verified back when they reached a receiver.
	ids := make([]string, len(hooks))
	for i, w := range hooks {
		ids[i] = w.ID
	}
	_, err := h.env.Store.Pool().Exec(context.Background(),
		`UPDATE webhooks SET verification = 'verified', verification_at = now(), verify_next_at = NULL WHERE id = ANY($1)`, ids)
	testenv.Must(t, err, "mark verified")
	cfg := h.cfg
	cfg.AllowLoopback = false
	cfg.Schedule = []time.Duration{50 * time.Millisecond}
	h.startWorker(t, cfg, "w1")
	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	for _, w := range hooks {
		testenv.WaitFor(t, "refused attempts of "+w.URL, 30*time.Second, func() bool {
			e, n := h.log(t, key, w.ID, "")
			return n == 2 && e[0].DeliveryStatus == "failed"
		})
		e, _ := h.log(t, key, w.ID, "")
		if e[0].StatusCode != nil || e[0].Error == nil || !strings.Contains(*e[0].Error, "refused to connect") ||
			!strings.Contains(*e[0].Error, "loopback") || strings.Contains(*e[0].Error, "127.0.0.1") {
			t.Errorf("%s: %+v", w.URL, e[0])
		}
	}
	if n := len(rc.deliveries()); n != 0 {
		t.Fatalf("%d requests reached the loopback receiver", n)
	}
}

// TestOutageParksJobsThenDeliversEverything: a receiver that fails every
// request gets a handful of them, not one per event: its circuit opens and
// its jobs are parked; when it answers again, every event arrives.
func TestOutageParksJobsThenDeliversEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	var up atomic.Bool
	var failed atomic.Int64
	rc := newReceiver(t, func(int, *http.Request) int {
		if up.Load() {
			return http.StatusNoContent
		}
		failed.Add(1)
		return http.StatusServiceUnavailable
	})
	h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")
	const n = 300
	ids := insertEvents(t, h.env.Store, n, agentA, "ToolCall")
	testenv.WaitFor(t, "the receiver's jobs parked", 30*time.Second, func() bool {
		var parked int64
		for p := range h.cfg.Partitions {
			d, err := h.q.Depth(context.Background(), p, time.Now())
			testenv.Must(t, err, "depth")
			parked += d.Parked
		}
		var pending int
		testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'`).Scan(&pending), "count")
		return parked == 1 && pending == n
	})
	up.Store(true)
	waitAll(t, rc, ids, 60*time.Second)
	if f := failed.Load(); f >= n/4 {
		t.Fatalf("the failing receiver got %d requests for %d events: its circuit did not hold them back", f, n)
	} else {
		t.Logf("%d events; the failing receiver got %d requests before it recovered", n, f)
	}
}

// TestSpellingsOfOneReceiverShareItsCap: webhooks of two accounts aimed
// at one receiver as 127.0.0.1, localhost and [::ffff:127.0.0.1] take
// their turns at one cap (one schedule in Redis, the address's), not one
// per spelling.
func TestSpellingsOfOneReceiverShareItsCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	rc := newReceiver(t, nil)
	u, err := url.Parse(rc.URL())
	testenv.Must(t, err, "receiver URL")
	for i, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		key := h.Key(t, fmt.Sprintf("account-%d", i%2))
		h.Create(t, key, map[string]any{"url": "http://" + host + ":" + u.Port() + u.Path, "events": []string{"attestation.created"}})
	}
	cfg := h.cfg
	cfg.UnverifiedHostRate, cfg.HostRate = 1000, 1000 // caps on, never in the way
	h.startWorker(t, cfg, "w1")
	insertEvents(t, h.env.Store, 4, agentA, "ToolCall")
	testenv.WaitForState(t, "12 deliveries", testenv.Patience, func() (bool, string) {
		n := len(rc.deliveries())
		return n >= 12, fmt.Sprintf("%d delivered", n)
	})
	keys, err := h.rdb.Keys(context.Background(), h.env.Prefix+"whcap:{h:*").Result()
	testenv.Must(t, err, "cap keys")
	if len(keys) == 0 {
		t.Fatal("no cap schedule in Redis")
	}
	for _, k := range keys {
		if !strings.Contains(k, "{h:127.0.0.1}") {
			t.Errorf("cap schedule %q: every spelling should share 127.0.0.1's (%v)", k, keys)
		}
	}
}
