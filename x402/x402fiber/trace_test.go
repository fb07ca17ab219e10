package x402fiber_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/attestd/attestd/internal/testing/otlptest"
	"github.com/attestd/attestd/x402"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// One paid request makes one connected trace, received over OTLP/HTTP:
// the node's server span (the child of the traceparent the client sent)
// is the root, and the cache, PostgreSQL, Redis, the verifier's verify
// and settle, and the chain RPC calls they make are its descendants.
func TestPaidRequestIsOneTrace(t *testing.T) {
	// Not parallel: tracing is process-wide (the test sets the OTEL_*
	// environment as an operator does).
	recv := otlptest.Start(t)
	flush := recv.Enable(t, "serve")
	f := newFixture(t)
	n := f.node(t, f.config(), nil)
	path := "/premium/full-history/" + f.agent
	pr := n.challenge(t, http.MethodGet, path, nil)
	payment := f.wallet(t, pr)

	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := n.Do(t, http.MethodGet, path, nil, map[string]string{x402.HeaderPaymentSignature: payment,
		"traceparent": "00-" + traceID + "-" + clientSpan + "-01", "tracestate": "vendor=1"})
	if r.Status != http.StatusOK {
		t.Fatalf("paid: %d %s", r.Status, r.Body)
	}
	flush() // exports every span still buffered
	if p := recv.Problems(); len(p) > 0 {
		t.Fatalf("receiver problems: %v", p)
	}
	spans := recv.Trace(traceID)
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var root otlptest.Span
	for _, s := range spans {
		if s.ParentSpanID == clientSpan {
			if root.SpanID != "" {
				t.Fatalf("two spans are the client's children: %q and %q", root.Name, s.Name)
			}
			root = s
		}
	}
	if root.SpanID == "" {
		t.Fatalf("no span is the child of the client's traceparent; trace %s has %d spans", traceID, len(spans))
	}
	wantRoot := "GET /api/v1/premium/full-history/:agentId"
	if root.Name != wantRoot || root.Kind != tracepb.Span_SPAN_KIND_SERVER || root.Attributes["http.response.status_code"] != "200" ||
		root.Attributes["http.route"] != "/api/v1/premium/full-history/:agentId" || root.Service != "attestd-serve" {
		t.Errorf("root span %+v, want %q (server, service attestd-serve)", root, wantRoot)
	}
	// Connected: every span's ancestry reaches the root.
	under := func(s otlptest.Span, ancestorPrefix string) bool {
		for i := 0; i < 64 && s.ParentSpanID != ""; i++ {
			p, ok := byID[s.ParentSpanID]
			if !ok {
				return false
			}
			if strings.HasPrefix(p.Name, ancestorPrefix) {
				return true
			}
			s = p
		}
		return false
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Logf("trace %s: %d spans: %s", traceID, len(spans), strings.Join(names, ", "))
	count := map[string]int{}
	for _, s := range spans {
		if s.SpanID == root.SpanID {
			continue
		}
		if !under(s, wantRoot) {
			t.Errorf("span %q (parent %s) is not under the server span", s.Name, s.ParentSpanID)
		}
		count[strings.Fields(s.Name)[0]]++
		switch {
		case strings.HasPrefix(s.Name, "chain rpc"):
			if !under(s, "x402 ") {
				t.Errorf("chain RPC span %q is not under the verifier's", s.Name)
			}
			count["chain rpc"]++
		case s.Name == "x402 verify", s.Name == "x402 settle":
			count[s.Name]++
		}
	}
	for _, want := range []string{"cache", "postgres", "redis", "x402 verify", "x402 settle", "chain rpc"} {
		if count[want] == 0 {
			t.Errorf("no %s span in the paid request's trace: %s", want, strings.Join(names, ", "))
		}
	}
}
