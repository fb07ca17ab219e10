package tracing

import (
	"context"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Middleware is the Fiber middleware that makes each request's server
// span (nil when tracing is off: install nothing). An incoming W3C
// traceparent/tracestate makes the span its child. The span is named
// after the route template ("GET /api/v1/agents/:agentId"), never the
// raw path, and the handlers get its context from c.UserContext().
func Middleware() fiber.Handler {
	if !Enabled() {
		return nil
	}
	return func(c *fiber.Ctx) error {
		parent := prop.Extract(c.UserContext(), fasthttpCarrier{c})
		// Fiber's strings point into fasthttp's request buffers, which the
		// next request on the connection overwrites; the span outlives the
		// handler (the exporter reads it later), so it keeps copies.
		method := strings.Clone(c.Method())
		ctx, span := Tracer().Start(parent, method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", method),
				attribute.String("url.path", string(c.Request().URI().Path())),
				attribute.String("url.scheme", c.Protocol())))
		c.SetUserContext(ctx)
		err := c.Next()
		route := c.Route().Path
		if route == "/" && len(c.Request().URI().Path()) > 1 {
			route = "unmatched" // only a middleware matched: no route template to name
		}
		span.SetName(method + " " + route)
		status := c.Response().StatusCode()
		if err != nil {
			// The error handler has not written the answer yet: the
			// status is the error's.
			status = fiber.StatusInternalServerError
			if fe, ok := err.(*fiber.Error); ok {
				status = fe.Code
			}
			span.RecordError(err)
		}
		span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(status))
		}
		span.End()
		// The user context outlives nothing: fasthttp reuses c.
		c.SetUserContext(context.Background())
		return err
	}
}

// fasthttpCarrier reads a request's headers for the propagator.
type fasthttpCarrier struct{ c *fiber.Ctx }

func (f fasthttpCarrier) Get(key string) string { return strings.Clone(f.c.Get(key)) } // tracestate and baggage outlive the handler
func (f fasthttpCarrier) Set(string, string)    {}
func (f fasthttpCarrier) Keys() []string        { return []string{"traceparent", "tracestate", "baggage"} }

var _ propagation.TextMapCarrier = fasthttpCarrier{}
