package tracing

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The server span over hostile trace headers: a request is answered the
// same whatever it sends; only a well-formed traceparent becomes the
// span's parent, and an unsampled one is honoured (no span recorded).
func TestMiddlewareHostileHeaders(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(uninstall)
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ReadBufferSize: 16 << 10}) // as the node's
	app.Use(Middleware())
	app.Get("/api/v1/agents/:agentId", func(c *fiber.Ctx) error { return c.SendString("ok") })

	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name, traceparent, tracestate string
		parent                        string // "" : a new root
		recorded                      bool
	}{
		{"none", "", "", "", true},
		{"valid", valid, "vendor=1", "00f067aa0ba902b7", true},
		{"unsampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "", "", false},
		{"bad version", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", "", true},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", "", true},
		{"zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "", "", true},
		{"uppercase", strings.ToUpper(valid), "", "", true},
		{"short", "00-4bf92f35-00f067aa-01", "", "", true},
		{"huge", "00-" + strings.Repeat("a", 8000), "", "", true},
		{"huge tracestate", valid, strings.Repeat("k=v,", 2000), "00f067aa0ba902b7", true},
		{"garbage tracestate", valid, "\x01\x02,,==", "00f067aa0ba902b7", true},
		{"not hex", "00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01", "", "", true},
	} {
		rec.Reset()
		req := httptest.NewRequest("GET", "/api/v1/agents/x", nil)
		if c.traceparent != "" {
			req.Header.Set("traceparent", c.traceparent)
		}
		if c.tracestate != "" {
			req.Header.Set("tracestate", c.tracestate)
		}
		resp, err := app.Test(req, -1)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", c.name, resp, err)
		}
		spans := rec.Ended()
		if !c.recorded {
			if len(spans) != 0 {
				t.Errorf("%s: %d spans recorded for an unsampled caller", c.name, len(spans))
			}
			continue
		}
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans", c.name, len(spans))
		}
		s := spans[0]
		if s.Name() != "GET /api/v1/agents/:agentId" {
			t.Errorf("%s: span name %q", c.name, s.Name())
		}
		parent := ""
		if s.Parent().IsValid() {
			parent = s.Parent().SpanID().String()
		}
		if parent != c.parent {
			t.Errorf("%s: parent %q, want %q", c.name, parent, c.parent)
		}
	}
	// An unmatched path is not named after another route.
	rec.Reset()
	if resp, err := app.Test(httptest.NewRequest("GET", "/nowhere/"+strings.Repeat("x", 500), nil), -1); err != nil || resp.StatusCode != 404 {
		t.Fatalf("unmatched: %v %v", resp, err)
	}
	if s := rec.Ended(); len(s) != 1 || s[0].Name() != "GET unmatched" {
		t.Errorf("unmatched: %d spans, %v", len(s), s)
	}
}
