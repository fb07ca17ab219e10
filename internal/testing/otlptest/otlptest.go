package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attestd/attestd/internal/testing/testenv"
	"github.com/attestd/attestd/internal/tracing"
	collpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, its ids in hex.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Kind         tracepb.Span_SpanKind
	Service      string
	Attributes   map[string]string
	Error        bool
}

// Receiver keeps every span exported to it.
type Receiver struct {
	URL string // the OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT)

	mu    sync.Mutex
	spans []Span
	bad   []string
}

// Start starts a receiver on 127.0.0.1, stopped when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.fail(req.Method + " " + req.URL.Path)
		http.NotFound(w, req)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, req.Body, 16<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			r.fail("gzip: " + err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		r.fail("read: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.fail("content type " + ct)
	}
	var msg collpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		r.fail("decode: " + err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Kind: s.GetKind(), Service: service, Attributes: map[string]string{},
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
				if p := s.GetParentSpanId(); len(p) > 0 {
					sp.ParentSpanID = hex.EncodeToString(p)
				}
				for _, kv := range s.GetAttributes() {
					sp.Attributes[kv.GetKey()] = anyString(kv.GetValue())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	b, _ = proto.Marshal(&collpb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return ""
}

func (r *Receiver) fail(s string) {
	r.mu.Lock()
	r.bad = append(r.bad, s)
	r.mu.Unlock()
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Problems are the requests the receiver could not take.
func (r *Receiver) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// Trace is the spans of one trace id.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// Enable turns tracing on against r for the rest of the test (the
// environment as an operator sets it: OTEL_EXPORTER_OTLP_ENDPOINT and a
// short batch delay). The returned flush stops the provider, exporting
// every span still buffered; it runs again at the test's end (a no-op
// then). Tests that call it must not run in parallel.
func (r *Receiver) Enable(t testing.TB, role string) (flush func()) {
	t.Helper()
	t.Setenv(tracing.EnvEndpoint, r.URL)
	t.Setenv(tracing.EnvSDKDisabled, "")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	stop, err := tracing.Setup(t.Context(), role, nil)
	if err != nil {
		t.Fatalf("tracing setup: %v", err)
	}
	if !tracing.Enabled() {
		t.Fatal("tracing setup left tracing off")
	}
	var once sync.Once
	flush = func() { once.Do(stop) }
	t.Cleanup(flush)
	return flush
}

// WaitFor waits up to d for a span matching ok and returns it.
func (r *Receiver) WaitFor(t testing.TB, d time.Duration, what string, ok func(Span) bool) Span {
	t.Helper()
	var found Span
	testenv.WaitForState(t, "a "+what+" span", d, func() (bool, string) {
		var names []string
		for _, s := range r.Spans() {
			if ok(s) {
				found = s
				return true, ""
			}
			names = append(names, s.Name)
		}
		return false, "received: " + strings.Join(names, ", ")
	})
	return found
}
