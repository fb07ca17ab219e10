package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/webhook"
)

// TestRetryAfterAManualSuccessIsNotSent: a delivery's first attempt fails
// and its retry waits; a manual retry succeeds meanwhile. When the
// scheduled retry comes due, the worker (which checks the statuses of
// retries in one query per read) drops it: the receiver gets the event
// twice (the failure, the manual retry), never a third time.
func TestRetryAfterAManualSuccessIsNotSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, testenv.Name("statuscheck"))
	rc := newReceiver(t, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusNotFound
		}
		return http.StatusNoContent
	})
	cfg := h.cfg
	// The scheduled retry comes due 8 s after the first attempt: the
	// manual retry is acknowledged well before, even on a loaded machine.
	const due = 8 * time.Second
	cfg.Schedule = []time.Duration{due, time.Second}
	h.startWorker(t, cfg, "w1")
	c := h.verifiedHook(t, key, rc)
	evs := insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	id := webhook.EventID(evs[0])
	var did string
	testenv.WaitFor(t, "the first attempt", 30*time.Second, func() bool {
		d := deliveriesOf(t, h, c.ID, evs)[id]
		did = d[0]
		return len(rc.deliveries()) == 1 && d[1] == "pending"
	})
	firstSeen := time.Now() // after the first attempt: its due time is before firstSeen + due
	r := h.Do(t, http.MethodPost, "/webhooks/"+c.ID+"/deliveries/"+did+"/retry", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("manual retry: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, "the manual retry acknowledged", 30*time.Second, func() bool { return deliveriesOf(t, h, c.ID, evs)[id][1] == "succeeded" })
	if n := rc.eventIDs(t)[id]; n != 2 {
		// The retry came due while the manual one was still in flight:
		// both are sent then (at least once), and nothing can be judged.
		t.Skipf("the manual retry took longer than the %s schedule (%d arrivals): the machine is too loaded to check", due, n)
	}
	// The scheduled retry came due (8 s, + at most 10%) and was read by now.
	time.Sleep(time.Until(firstSeen.Add(due + due/10 + 2*time.Second)))
	if n := rc.eventIDs(t)[id]; n != 2 {
		t.Fatalf("event %s arrived %d times, want 2 (the failure, the manual retry)", id, n)
	}
}
