package tracing

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Transport wraps next (nil: http.DefaultTransport) so that each request
// made in a traced context gets a client span and carries its
// traceparent. Off, it returns next unchanged. name prefixes the spans'
// names ("chain rpc", "x402 facilitator").
func Transport(name string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if !Enabled() {
		return next
	}
	return &transport{name: name, next: next}
}

type transport struct {
	name string
	next http.RoundTripper
	// method (nil: none) names the call within the span's name.
	method func(*http.Request) string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return t.next.RoundTrip(req)
	}
	name := t.name
	if t.method != nil {
		if m := t.method(req); m != "" {
			name += " " + m
		}
	}
	ctx, span := Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Hostname()), attribute.String("url.path", req.URL.Path)))
	req = req.Clone(ctx) // a RoundTripper must not change the caller's request
	Inject(ctx, req.Header)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		End(span, err)
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	span.End()
	return resp, nil
}
