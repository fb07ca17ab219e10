package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/devtools/seed"
	"github.com/attestd/attestd/internal/testing/otlptest"
	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/tracing"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// An attestation's delivery leads back to the indexer round that wrote
// it: the event is written through the store's write path (Apply) under
// the round's span, as the indexer does, and the outbox row, the event
// stream and the job carry that span's traceparent, so the delivery span
// the receiver's traceparent names, and the fan-out span that queued it,
// link to it. A test event links to its POST .../test request the same
// way; an event written without a trace (an outbox row from before the
// column) is delivered with no link.
func TestDeliveryLinksToWritingRound(t *testing.T) {
	// Not parallel: tracing is process-wide.
	recv := otlptest.Start(t)
	recv.Enable(t, "worker")
	tp, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	if !ok {
		t.Fatalf("tracer provider %T, want the SDK's", otel.GetTracerProvider())
	}
	rec := tracetest.NewSpanRecorder() // beside the exporter: the OTLP receiver does not keep links
	tp.RegisterSpanProcessor(rec)

	h := newHarness(t, harnessOpt{})
	key := h.Key(t, "acme")
	rc := newReceiver(t, nil)
	w := h.Create(t, key, map[string]any{"url": rc.URL(), "events": []string{"attestation.created"}})
	h.startWorker(t, h.cfg, "w1")

	// The indexer's round: a sync span (a known trace id) whose batch span
	// applies the batch.
	const traceID, roundSpan = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	ctx := tracing.WithTraceparent(context.Background(), "00-"+traceID+"-"+roundSpan+"-01")
	ctx, batchSpan := tracing.Start(ctx, "indexer batch", trace.SpanKindInternal)
	now := time.Now()
	agent, batch := seed.NewAgent(now, 1<<40, 11)
	batch.Attestations = seed.NewAttestations([]seed.Agent{agent}, 1, now, 1<<40+10, 12)
	_, err := h.env.Store.Apply(ctx, batch)
	testenv.Must(t, err, "apply")
	batchSpan.End()
	written := batchSpan.SpanContext()
	if written.TraceID().String() != traceID {
		t.Fatalf("the batch span's trace %s, want %s", written.TraceID(), traceID)
	}

	first := waitDelivery(t, rc, 1)
	deliver, fanOut := deliverySpans(t, rec, first)
	for _, s := range []sdktrace.ReadOnlySpan{deliver, fanOut} {
		if l := s.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != written.TraceID() || l[0].SpanContext.SpanID() != written.SpanID() {
			t.Errorf("%q span links %s, want one to the indexer batch %s/%s", s.Name(), describeLinks(l), traceID, written.SpanID())
		}
	}
	if fanOut.Parent().IsValid() || deliver.SpanContext().TraceID() == written.TraceID() {
		t.Errorf("the fan-out is the child of %v (trace %s): a batch of events of many rounds must only link to them",
			fanOut.Parent(), deliver.SpanContext().TraceID())
	}

	// An outbox row without a traceparent is delivered, unlinked.
	insertEvents(t, h.env.Store, 1, agentA, "ToolCall")
	second := waitDelivery(t, rc, 2)
	deliver, fanOut = deliverySpans(t, rec, second)
	if len(deliver.Links()) != 0 || len(fanOut.Links()) != 0 {
		t.Errorf("an untraced event's spans link to %s and %s", describeLinks(deliver.Links()), describeLinks(fanOut.Links()))
	}

	// A test event links to the request that wrote it (the server span,
	// the child of the client's traceparent).
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	r := h.node.Do(t, http.MethodPost, "/webhooks/"+w.ID+"/test", nil, map[string]string{"x-api-key": key,
		"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"})
	if r.Status != http.StatusAccepted {
		t.Fatalf("test event: %d %s", r.Status, r.Body)
	}
	deliver, _ = deliverySpans(t, rec, waitDelivery(t, rc, 3))
	if l := deliver.Links(); len(l) != 1 || l[0].SpanContext.TraceID().String() != clientTrace || l[0].SpanContext.SpanID().String() == clientSpan {
		t.Errorf("the test event's delivery links %s, want one to the request's server span in trace %s", describeLinks(l), clientTrace)
	}
}

// deliverySpans waits for the "webhook deliver" span d's traceparent
// names (it ends once the worker has the answer) and returns it with its
// parent, the "webhook fan-out" span.
func deliverySpans(t *testing.T, rec *tracetest.SpanRecorder, d delivery) (deliver, fanOut sdktrace.ReadOnlySpan) {
	t.Helper()
	id := parseTraceparent(t, d)[2]
	find := func(what string, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
		var found sdktrace.ReadOnlySpan
		testenv.WaitForState(t, what, testenv.Patience, func() (bool, string) {
			var names []string
			for _, s := range rec.Ended() {
				if match(s) {
					found = s
					return true, ""
				}
				names = append(names, s.Name())
			}
			return false, "ended: " + strings.Join(names, ", ")
		})
		return found
	}
	deliver = find("the delivery span "+id, func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().SpanID().String() == id })
	if deliver.Name() != "webhook deliver" {
		t.Fatalf("the receiver's traceparent names span %q", deliver.Name())
	}
	parent := deliver.Parent().SpanID()
	fanOut = find("the fan-out span "+parent.String(), func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().SpanID() == parent })
	if fanOut.Name() != "webhook fan-out" {
		t.Fatalf("the delivery span's parent is %q", fanOut.Name())
	}
	return deliver, fanOut
}

func describeLinks(ls []sdktrace.Link) string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s/%s", l.SpanContext.TraceID(), l.SpanContext.SpanID()))
	}
	return "[" + strings.Join(out, " ") + "]"
}
