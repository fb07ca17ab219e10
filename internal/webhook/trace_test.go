package webhook_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/otlptest"
	"github.com/attestd/attestd/internal/testing/testenv"
)

// A delivery carries the trace of whatever queued it: the receiver gets a
// traceparent naming the worker's delivery span, which the job's carried
// context makes a child of the queuing span: the worker's fan-out of an
// outbox event, or the API request of a manual retry (itself the child of
// the traceparent its client sent).
func TestDeliveryCarriesTraceparent(t *testing.T) {
	// Not parallel: tracing is process-wide.
	recv := otlptest.Start(t)
	recv.Enable(t, "worker")
	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")

	// A test event goes through the outbox: the fan-out queues it.
	r := h.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/test", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("test event: %d %s", r.Status, r.Body)
	}
	first := waitDelivery(t, rc, 1)
	checkSignatures(t, w.Secret, first)
	tp1 := parseTraceparent(t, first)
	did := first.Header.Get("webhook-id")

	// A manual retry is queued by the request itself.
	const traceID, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	r = h.node.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/deliveries/"+did+"/retry", nil, map[string]string{"x-api-key": key,
		"traceparent": "00-" + traceID + "-" + clientSpan + "-01"})
	if r.Status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	second := waitDelivery(t, rc, 2)
	checkSignatures(t, w.Secret, second)
	tp2 := parseTraceparent(t, second)
	if tp2[1] != traceID || tp2[2] == clientSpan {
		t.Fatalf("the retry's receiver got traceparent %q, want a span of trace %s", second.Header.Get("traceparent"), traceID)
	}

	// A delivery span ends once the worker has the receiver's answer, which
	// may be after the receiver saw the request: each span is waited for as
	// the batch exporter sends it.
	span := func(id string) (otlptest.Span, bool) {
		if id == "" {
			return otlptest.Span{}, false
		}
		return recv.WaitFor(t, testenv.Patience, "span "+id, func(s otlptest.Span) bool { return s.SpanID == id }), true
	}
	check := func(tp []string, parentName, parentOfParent string) {
		t.Helper()
		d, ok := span(tp[2])
		if !ok || d.Name != "webhook deliver" || d.TraceID != tp[1] || d.Service != "attestd-worker" {
			t.Fatalf("the traceparent's span %s: %+v (found %v), want the worker's delivery span", tp[2], d, ok)
		}
		p, ok := span(d.ParentSpanID)
		if !ok || p.Name != parentName || p.TraceID != tp[1] || p.ParentSpanID != parentOfParent {
			t.Fatalf("the delivery span's parent %+v (found %v), want %q (parent %q)", p, ok, parentName, parentOfParent)
		}
	}
	check(tp1, "webhook fan-out", "")
	check(tp2, "POST /api/v1/webhooks/:id/deliveries/:deliveryId/retry", clientSpan)
}

// waitDelivery waits for the receiver's nth delivery.
func waitDelivery(t *testing.T, rc *receiver, n int) delivery {
	t.Helper()
	testenv.WaitFor(t, "a delivery", 30*time.Second, func() bool { return len(rc.deliveries()) >= n })
	return rc.deliveries()[n-1]
}

// parseTraceparent splits a delivery's traceparent: version, trace id,
// span id, flags.
func parseTraceparent(t *testing.T, d delivery) []string {
	t.Helper()
	h := d.Header.Get("traceparent")
	tp := strings.Split(h, "-")
	if len(tp) != 4 || tp[0] != "00" || len(tp[1]) != 32 || len(tp[2]) != 16 || tp[3] != "01" {
		t.Fatalf("delivery traceparent %q", h)
	}
	return tp
}
