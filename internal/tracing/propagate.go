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
