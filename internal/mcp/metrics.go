package mcp

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/attestd/attestd/internal/metric"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a tool call, as counted.
const (
	outcomeOK           = "ok"
	outcomeToolError    = "tool_error"    // an answer with isError: bad input, not found, API refusals
	outcomePaymentError = "payment_error" // the x402 transport's payment error (required, refused, not settled)
	outcomeProtocol     = "protocol_error"
)

// metrics are a node endpoint's: MCP methods served and tool calls by
// tool and outcome, with their durations.
type metrics struct {
	methods *prometheus.CounterVec
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		methods: metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_mcp_requests_total",
			Help: "MCP requests and notifications the node's /mcp endpoint handled, by JSON-RPC method (other: a method it does not know)"}, []string{"method"})),
		calls: metric.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "attestd_mcp_tool_calls_total",
			Help: "tool calls on the node's /mcp endpoint, by tool and outcome (ok, tool_error, payment_error, protocol_error)"}, []string{"tool", "outcome"})),
		seconds: metric.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "attestd_mcp_tool_call_seconds",
			Help: "duration of tool calls on the node's /mcp endpoint, by tool", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 40}},
			[]string{"tool"})),
	}
	for _, t := range ToolNames() { // every series exists from the start
		m.seconds.WithLabelValues(t)
		for _, o := range []string{outcomeOK, outcomeToolError, outcomePaymentError, outcomeProtocol} {
			m.calls.WithLabelValues(t, o)
		}
	}
	return m
}

// knownMethods label attestd_mcp_requests_total; any other is "other",
// so a caller cannot grow the series.
var knownMethods = []string{"initialize", "notifications/initialized", "ping", "server/discover", "tools/list", "tools/call",
	"notifications/cancelled", "logging/setLevel"}

// middleware counts each method, and each tool call by outcome.
func (m *metrics) middleware(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		label := method
		if !slices.Contains(knownMethods, method) {
			label = "other"
		}
		m.methods.WithLabelValues(label).Inc()
		call, ok := req.(*mcpsdk.CallToolRequest)
		if method != "tools/call" || !ok || call.Params == nil || !slices.Contains(ToolNames(), call.Params.Name) {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		m.seconds.WithLabelValues(call.Params.Name).Observe(time.Since(start).Seconds())
		m.calls.WithLabelValues(call.Params.Name, outcome(res, err)).Inc()
		return res, err
	}
}

// outcome classifies a tool call's answer.
func outcome(res mcpsdk.Result, err error) string {
	if err != nil {
		return outcomeProtocol
	}
	out, _ := res.(*mcpsdk.CallToolResult)
	switch {
	case out == nil || !out.IsError:
		return outcomeOK
	case len(out.Content) > 0 && isPaymentError(out.Content[0]):
		return outcomePaymentError
	}
	return outcomeToolError
}

func isPaymentError(c mcpsdk.Content) bool {
	t, ok := c.(*mcpsdk.TextContent)
	return ok && strings.HasPrefix(t.Text, `{"`+ErrorKey+`"`)
}
