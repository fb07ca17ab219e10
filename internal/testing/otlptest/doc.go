// Package otlptest is an in-process OTLP/HTTP trace receiver for tests: a
// net/http server on 127.0.0.1 that decodes each protobuf
// ExportTraceServiceRequest and keeps its spans, and helpers that turn
// on tracing against it.
package otlptest
