package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Inject writes ctx's trace context (traceparent, tracestate) into h.
func Inject(ctx context.Context, h http.Header) {
	prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// Traceparent is the W3C traceparent of ctx's span ("" when it has none),
// to carry a trace through a queued job.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceparent returns ctx carrying the remote span that traceparent
// names (ctx unchanged when it is empty or malformed).
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// TraceparentLen is the length of a W3C traceparent of version 00, the
// only version Traceparent writes; CleanTraceparent keeps nothing longer.
const TraceparentLen = 55

// CleanTraceparent returns traceparent when it is a well-formed version-00
// W3C traceparent naming a valid span, and "" otherwise: what a
// traceparent stored or queued for later (an outbox row, a stream
// message) is bounded to.
func CleanTraceparent(traceparent string) string {
	if _, ok := spanContextOf(traceparent); !ok {
		return ""
	}
	return traceparent
}

// Link is the span link to the span traceparent names; ok is false when
// traceparent is empty or malformed (see CleanTraceparent).
func Link(traceparent string) (l trace.Link, ok bool) {
	sc, ok := spanContextOf(traceparent)
	if !ok {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}

func spanContextOf(traceparent string) (trace.SpanContext, bool) {
	if len(traceparent) != TraceparentLen {
		return trace.SpanContext{}, false
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": traceparent}))
	return sc, sc.IsValid()
}
