// Package tracing sets up OpenTelemetry tracing (OTLP over HTTP) for a
// process and provides the instruments the other packages install: a
// Fiber middleware for server spans, a pgx query tracer, a go-redis hook,
// an http.RoundTripper for outgoing calls (the chain RPC), and the W3C
// trace-context helpers that carry a trace through a queued job.
//
// Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and OTEL_SDK_DISABLED is not
// true). Off, nothing is installed: Enabled reports false, Middleware is
// nil, and the callers' hot paths take their untraced branch, so an
// untraced node does no extra work and makes no extra allocation.
package tracing
