package webhook_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
)

// TestRecoveredSendsStayInTheRecoveryPool: with a recovery pool of one,
// a worker sends at most one recovered delivery at a time, however many
// its endpoint's concurrency allows, while live deliveries to the same
// webhook go out beside it; every recovered and every live event
// arrives exactly once.
func TestRecoveredSendsStayInTheRecoveryPool(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("recpool"))
	var down atomic.Bool
	down.Store(true)
	var recovered sync.Map // delivery id -> true: the recovered deliveries
	var inflight, most atomic.Int64
	rc := newReceiver(t, func(_ int, r *http.Request) int {
		if down.Load() {
			return http.StatusNotFound
		}
		if _, ok := recovered.Load(r.Header.Get("webhook-id")); ok {
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond) // overlapping sends would show
			inflight.Add(-1)
		}
		return http.StatusNoContent
	})
	cfg := h.cfg
	cfg.Schedule = []time.Duration{20 * time.Millisecond}
	cfg.EndpointConcurrency = 8
	cfg.RecoveryConcurrency = 1
	stop := h.startWorker(t, cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	failed := insertEvents(t, h.env.Store, 24, agentA, "ToolCall")
	for _, d := range waitFailed(t, h, c.ID, failed) {
		recovered.Store(d[0], true)
	}
	stop()
	down.Store(false)
	received := len(rc.deliveries())

	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/recover", key, map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
	if r.Status != http.StatusAccepted {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	h.startWorker(t, cfg, "w2")
	live := insertEvents(t, h.env.Store, 6, agentA, "ToolCall")
	want := len(failed) + len(live)
	testenv.WaitFor(t, "the recovered and live deliveries", 60*time.Second, func() bool { return len(rc.deliveries()) >= received+want })
	time.Sleep(300 * time.Millisecond) // anything extra would arrive by now
	got := map[string]int{}
	for _, d := range rc.deliveries()[received:] {
		id, _ := d.event(t)
		got[id]++
	}
	for _, ev := range append(append([]int64{}, failed...), live...) {
		if n := got[webhook.EventID(ev)]; n != 1 {
			t.Errorf("event %s delivered %d times, want once", webhook.EventID(ev), n)
		}
	}
	if len(got) != want {
		t.Errorf("delivered %d events, want %d", len(got), want)
	}
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d recovered deliveries in flight at once, want 1 (the recovery pool)", m)
	}
}
