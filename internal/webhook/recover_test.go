package webhook_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/store"
	"github.com/attestd/attestd/internal/testing/apptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
)

// recoveryView is a recovery as the API shows it.
type recoveryView struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Status    string `json:"status"`
	Queued    int    `json:"queued"`
	Processed int    `json:"processed"`
	Skipped   int    `json:"skipped"`
}

// deliveriesOf reads the deliveries of the given events to webhook id:
// event id -> (delivery id, status, created_at).
func deliveriesOf(t *testing.T, h *harness, webhookID string, events []int64) map[string][3]string {
	t.Helper()
	rows, err := h.env.Store.Pool().Query(context.Background(), `SELECT outbox_id, id, status,
			to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
		FROM webhook_deliveries WHERE webhook_id = $1 AND outbox_id = ANY($2)`, webhookID, events)
	testenv.Must(t, err, "deliveries")
	defer rows.Close()
	out := map[string][3]string{}
	for rows.Next() {
		var ev int64
		var id, st, at string
		testenv.Must(t, rows.Scan(&ev, &id, &st, &at), "scan")
		out[webhook.EventID(ev)] = [3]string{id, st, at}
	}
	return out
}

// waitFailed waits until every event's delivery to webhookID failed.
func waitFailed(t *testing.T, h *harness, webhookID string, events []int64) map[string][3]string {
	t.Helper()
	var ds map[string][3]string
	testenv.WaitFor(t, "the deliveries failed", 60*time.Second, func() bool {
		ds = deliveriesOf(t, h, webhookID, events)
		if len(ds) != len(events) {
			return false
		}
		for _, d := range ds {
			if d[1] != "failed" {
				return false
			}
		}
		return true
	})
	return ds
}

// TestRecoverResendsExactlyTheFailed: a receiver down for a while; its
// failed deliveries before, within and after a window; one of the window's
// acknowledged later (a manual retry). Recovering the window re-delivers
// exactly the window's failed deliveries, each once, with the same
// webhook-id; not the acknowledged one, nothing outside the window. Asking
// again while the recovery runs answers the same recovery.
func TestRecoverResendsExactlyTheFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("recover"))
	var down atomic.Bool
	down.Store(true)
	// Down: its routes answer 404 (a 5xx would open the circuit, whose
	// growing cooldown only makes the failures slower to reach).
	rc := newReceiver(t, func(int, *http.Request) int {
		if down.Load() {
			return http.StatusNotFound
		}
		return http.StatusNoContent
	})
	cfg := h.cfg
	cfg.Schedule = []time.Duration{20 * time.Millisecond}
	stop := h.startWorker(t, cfg, "w1")
	c := h.verifiedHook(t, key, rc)

	before := insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	dBefore := waitFailed(t, h, c.ID, before)
	time.Sleep(20 * time.Millisecond)
	window := insertEvents(t, h.env.Store, 4, agentA, "ToolCall")
	dWindow := waitFailed(t, h, c.ID, window)
	time.Sleep(20 * time.Millisecond)
	after := insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	dAfter := waitFailed(t, h, c.ID, after)

	// The window: from just after the last "before" delivery to just after
	// the last window delivery (the database's times, microseconds).
	last := func(ds map[string][3]string) string {
		var ts []string
		for _, d := range ds {
			ts = append(ts, d[2])
		}
		sort.Strings(ts)
		return ts[len(ts)-1]
	}
	since := bump(t, last(dBefore))
	until := bump(t, last(dWindow))
	for _, d := range dAfter {
		if d[2] < until {
			t.Fatalf("an 'after' delivery was created at %s, before the window's end %s", d[2], until)
		}
	}

	// The receiver is back; one window delivery is acknowledged by a manual retry.
	down.Store(false)
	acked := webhook.EventID(window[0])
	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/deliveries/"+dWindow[acked][0]+"/retry", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("manual retry: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, "the manual retry acknowledged", 30*time.Second, func() bool { return deliveriesOf(t, h, c.ID, window[:1])[acked][1] == "succeeded" })
	stop() // the recovery waits for a worker: asked twice while it runs
	received := len(rc.deliveries())

	body := map[string]any{"since": since, "until": until}
	r = h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, body)
	if r.Status != http.StatusAccepted {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	var rec struct{ Data recoveryView }
	r.JSON(t, &rec)
	if rec.Data.Queued != len(window)-1 || rec.Data.State != "running" || rec.Data.Status != "failed" {
		t.Fatalf("recovery: %+v, want %d queued, running", rec.Data, len(window)-1)
	}
	r = h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, body)
	var again struct{ Data recoveryView }
	r.JSON(t, &again)
	if r.Status != http.StatusOK || again.Data.ID != rec.Data.ID {
		t.Fatalf("the same window again: %d %+v, want 200 with %s", r.Status, again.Data, rec.Data.ID)
	}

	h.startWorker(t, cfg, "w2")
	testenv.WaitFor(t, "the recovery done", 30*time.Second, func() bool {
		r := h.Do(t, http.MethodGet, "/webhooks/"+c.ID+"/recoveries/"+rec.Data.ID, key, nil)
		var v struct{ Data recoveryView }
		r.JSON(t, &v)
		return v.Data.State == "done" && v.Data.Processed == len(window)-1
	})
	testenv.WaitFor(t, "the recovered deliveries", 30*time.Second, func() bool { return len(rc.deliveries()) >= received+len(window)-1 })
	time.Sleep(500 * time.Millisecond) // anything extra would arrive by now
	got := map[string]int{}
	for _, d := range rc.deliveries()[received:] {
		id, _ := d.event(t)
		got[id]++
		if want := dWindow[id][0]; d.Header.Get("webhook-id") != want {
			t.Errorf("event %s came with webhook-id %s, want the delivery's %s", id, d.Header.Get("webhook-id"), want)
		}
		checkSignatures(t, c.Secret, d)
	}
	for _, ev := range window[1:] {
		if n := got[webhook.EventID(ev)]; n != 1 {
			t.Errorf("window event %s re-delivered %d times, want once", webhook.EventID(ev), n)
		}
	}
	if got[acked] != 0 {
		t.Errorf("the acknowledged event %s was delivered again", acked)
	}
	for _, ev := range append(append([]int64{}, before...), after...) {
		if got[webhook.EventID(ev)] != 0 {
			t.Errorf("event %s outside the window was re-delivered", webhook.EventID(ev))
		}
	}
	if len(got) != len(window)-1 {
		t.Errorf("re-delivered %v", got)
	}
	// Each delivery is recorded succeeded once the worker's recorder has
	// flushed its attempt, which may come after the receiver saw it.
	testenv.WaitForState(t, "every window delivery recorded succeeded", testenv.Patience, func() (bool, string) {
		var not []string
		for id, d := range deliveriesOf(t, h, c.ID, window) {
			if d[1] != "succeeded" {
				not = append(not, id+" is "+d[1])
			}
		}
		sort.Strings(not)
		return len(not) == 0, strings.Join(not, ", ")
	})
	// An empty window is done at once, with nothing queued.
	r = h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, map[string]any{"since": since, "until": until, "status": "failed"})
	var empty struct{ Data recoveryView }
	r.JSON(t, &empty)
	if r.Status != http.StatusAccepted || empty.Data.Queued != 0 || empty.Data.State != "done" {
		t.Errorf("recovering again: %d %+v", r.Status, empty.Data)
	}
}

// bump is a database time (microseconds) plus a microsecond, RFC 3339.
func bump(t *testing.T, at string) string {
	tm, err := time.Parse("2006-01-02T15:04:05.000000Z", at)
	testenv.Must(t, err, "time %s", at)
	return tm.Add(time.Microsecond).Format(time.RFC3339Nano)
}

// TestRecoveriesOfOtherWindowsAreBounded: other windows each start a
// recovery only up to store.MaxRunningRecoveries; the next is 409
// RECOVERIES_RUNNING, while the same window again still answers its
// running recovery.
func TestRecoveriesOfOtherWindowsAreBounded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("recoverbound"))
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusNoContent })
	stop := h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	// One event at a time: each delivery made by its own fan-out, at its own time.
	var events []int64
	for range store.MaxRunningRecoveries + 1 {
		events = append(events, insertEvents(t, h.env.Store, 1, agentA, "ToolCall")...)
		testenv.WaitFor(t, "the delivery made", 30*time.Second, func() bool { return len(deliveriesOf(t, h, c.ID, events)) == len(events) })
	}
	var ds map[string][3]string
	testenv.WaitFor(t, "the deliveries acknowledged", 30*time.Second, func() bool {
		ds = deliveriesOf(t, h, c.ID, events)
		for _, e := range events {
			if ds[webhook.EventID(e)][1] != "succeeded" {
				return false
			}
		}
		return true
	})
	stop() // no worker: the recoveries stay running
	// One window per delivery (a delivery is in one running recovery at
	// most: overlapping windows would find nothing left to take).
	var at []string
	for _, d := range ds {
		at = append(at, d[2])
	}
	sort.Strings(at)
	for i := 1; i < len(at); i++ {
		if at[i] == at[i-1] {
			t.Skipf("two deliveries created in the same microsecond (%s): no window holds one alone", at[i])
		}
	}
	ask := func(i int) *apptest.Response {
		since, err := time.Parse("2006-01-02T15:04:05.000000Z", at[i])
		testenv.Must(t, err, "time %s", at[i])
		return h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key,
			map[string]any{"since": since.Format(time.RFC3339Nano), "until": bump(t, at[i]), "status": "all"})
	}
	for i := 0; i < store.MaxRunningRecoveries; i++ {
		r := ask(i)
		var v struct{ Data recoveryView }
		r.JSON(t, &v)
		if r.Status != http.StatusAccepted || v.Data.Queued != 1 || v.Data.State != "running" {
			t.Fatalf("recovery %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := ask(store.MaxRunningRecoveries); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "RECOVERIES_RUNNING") {
		t.Fatalf("one window more: %d %s, want 409 RECOVERIES_RUNNING", r.Status, r.Body)
	}
	if r := ask(0); r.Status != http.StatusOK {
		t.Fatalf("the first window again: %d %s, want 200", r.Status, r.Body)
	}
}

// TestRecoverCountIsWhatItSends is the case: a recovery with
// status all over a window holding deliveries that succeeded and
// deliveries still pending (being delivered) when it is asked for. It
// answers the count of the succeeded ones and sends exactly those again,
// although the pending ones succeed before a worker runs it (here its
// lease is held meanwhile, as when the worker that took it stopped).
func TestRecoverCountIsWhatItSends(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("count"))
	rc := newReceiver(t, nil)
	since := time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	stop := h.startWorker(t, h.cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	sent := insertEvents(t, h.env.Store, 4, agentA, "ToolCall")
	testenv.WaitFor(t, "the first deliveries succeeded", 30*time.Second, func() bool {
		ds := deliveriesOf(t, h, c.ID, sent)
		n := 0
		for _, d := range ds {
			if d[1] == "succeeded" {
				n++
			}
		}
		return n == len(sent)
	})
	stop()
	pending := insertEvents(t, h.env.Store, 3, agentA, "ToolCall")
	_, err := h.env.Store.FanOut(context.Background(), pending) // pending deliveries, no worker to send them yet
	testenv.Must(t, err, "fan out")

	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, map[string]any{"since": since, "status": "all"})
	if r.Status != http.StatusAccepted {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	var rec struct{ Data recoveryView }
	r.JSON(t, &rec)
	if rec.Data.Queued != len(sent) || rec.Data.State != "running" {
		t.Fatalf("recovery %+v, want %d queued (the pending ones are under way already)", rec.Data, len(sent))
	}
	_, err = h.env.Store.Pool().Exec(context.Background(), `UPDATE webhook_recoveries SET lease_until = now() + interval '1 hour' WHERE id = $1`, rec.Data.ID)
	testenv.Must(t, err, "hold the lease")
	received := len(rc.deliveries())
	h.startWorker(t, h.cfg, "w2")
	testenv.WaitFor(t, "the pending deliveries succeeded", 30*time.Second, func() bool {
		for _, d := range deliveriesOf(t, h, c.ID, pending) {
			if d[1] != "succeeded" {
				return false
			}
		}
		return true
	})
	_, err = h.env.Store.Pool().Exec(context.Background(), `UPDATE webhook_recoveries SET lease_until = NULL WHERE id = $1`, rec.Data.ID)
	testenv.Must(t, err, "let the lease go")
	var v struct{ Data recoveryView }
	testenv.WaitFor(t, "the recovery done", 30*time.Second, func() bool {
		r := h.Do(t, http.MethodGet, "/webhooks/"+c.ID+"/recoveries/"+rec.Data.ID, key, nil)
		r.JSON(t, &v)
		return v.Data.State == "done"
	})
	if v.Data.Queued != len(sent) || v.Data.Processed != len(sent) || v.Data.Skipped != 0 {
		t.Fatalf("the recovery answered %d and ended %+v: it must send what it counted", rec.Data.Queued, v.Data)
	}
	testenv.WaitFor(t, "the recovered deliveries", 30*time.Second, func() bool { return len(rc.deliveries()) >= received+len(sent)+len(pending) })
	time.Sleep(500 * time.Millisecond) // anything extra would arrive by now
	got := map[string]int{}
	for _, d := range rc.deliveries()[received:] {
		id, _ := d.event(t)
		got[id]++
	}
	for _, ev := range append(append([]int64{}, sent...), pending...) {
		if n := got[webhook.EventID(ev)]; n != 1 {
			t.Errorf("event %s arrived %d times after the recovery was asked for, want once (the recovery's resend, or its own first delivery)", webhook.EventID(ev), n)
		}
	}
}

// TestRecoverWindowBelowAMicrosecond: a window is checked at the precision
// it is stored in (microseconds): both ends in the same microsecond is an
// empty window, 400 INVALID_PARAM, never a 500; ends a microsecond apart
// once cut are a valid window, echoed cut.
func TestRecoverWindowBelowAMicrosecond(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("micro"))
	c := h.Create(t, key, map[string]any{"url": newReceiver(t, nil).URL(), "events": []string{"attestation.created"}})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	at := func(d time.Duration) string { return base.Add(d).Format(time.RFC3339Nano) }
	for _, x := range []struct {
		since, until string
		want         int
		echo         [2]time.Time // the window stored (cut), when accepted
	}{
		{at(100 * time.Nanosecond), at(900 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(0), at(999 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(time.Nanosecond), at(2 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(time.Microsecond + time.Nanosecond), at(time.Microsecond + 999*time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(999 * time.Nanosecond), at(999 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(900 * time.Nanosecond), at(100 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		// The same instant written in another zone, a nanosecond apart.
		{at(500 * time.Nanosecond), base.Add(501 * time.Nanosecond).In(time.FixedZone("", 3600)).Format(time.RFC3339Nano), http.StatusBadRequest, [2]time.Time{}},
		{base.Add(500 * time.Nanosecond).In(time.FixedZone("", -5*3600)).Format(time.RFC3339Nano), at(700 * time.Nanosecond), http.StatusBadRequest, [2]time.Time{}},
		{at(999 * time.Nanosecond), at(time.Microsecond), http.StatusAccepted, [2]time.Time{base, base.Add(time.Microsecond)}},
		{at(500 * time.Nanosecond), at(1500 * time.Nanosecond), http.StatusAccepted, [2]time.Time{base, base.Add(time.Microsecond)}},
		{at(2 * time.Microsecond), at(3*time.Microsecond + 999*time.Nanosecond), http.StatusAccepted, [2]time.Time{base.Add(2 * time.Microsecond), base.Add(3 * time.Microsecond)}},
	} {
		r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, map[string]any{"since": x.since, "until": x.until})
		if r.Status != x.want {
			t.Errorf("window [%s, %s): %d %s, want %d", x.since, x.until, r.Status, r.Body, x.want)
			continue
		}
		if x.want == http.StatusBadRequest && r.ErrorCode() != "INVALID_PARAM" {
			t.Errorf("window [%s, %s): code %s", x.since, x.until, r.ErrorCode())
		}
		if x.want == http.StatusAccepted {
			var v struct{ Data recoveryView }
			r.JSON(t, &v)
			var since, until time.Time
			testenv.Must(t, h.env.Store.Pool().QueryRow(context.Background(), `SELECT since, until FROM webhook_recoveries WHERE id = $1`,
				v.Data.ID).Scan(&since, &until), "stored window")
			if !since.Equal(x.echo[0]) || !until.Equal(x.echo[1]) {
				t.Errorf("window [%s, %s) stored as [%s, %s), want [%s, %s)", x.since, x.until, since.Format(time.RFC3339Nano),
					until.Format(time.RFC3339Nano), x.echo[0].Format(time.RFC3339Nano), x.echo[1].Format(time.RFC3339Nano))
			}
		}
	}
}
