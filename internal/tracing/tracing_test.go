package tracing

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestConfigured(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{EnvEndpoint: "http://collector:4318"}, true},
		{map[string]string{EnvTracesEndpoint: "http://collector:4318/v1/traces"}, true},
		{map[string]string{EnvEndpoint: "  "}, false},
		{map[string]string{EnvEndpoint: "http://c:4318", EnvSDKDisabled: "true"}, false},
		{map[string]string{EnvEndpoint: "http://c:4318", EnvSDKDisabled: "TRUE"}, false},
		{map[string]string{EnvEndpoint: "http://c:4318", EnvSDKDisabled: "false"}, true},
		{map[string]string{EnvEndpoint: "http://c:4318", EnvTracesExporter: "none"}, false},
		{map[string]string{EnvEndpoint: "http://c:4318", EnvTracesExporter: "otlp"}, true},
	} {
		if got := Configured(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Configured(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// Off (no endpoint), Setup installs nothing and every instrument is
// absent or the caller's own.
func TestOffInstallsNothing(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv(EnvTracesEndpoint, "")
	stop, err := Setup(context.Background(), "serve", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if Enabled() {
		t.Fatal("tracing on without an endpoint")
	}
	if Middleware() != nil {
		t.Error("Middleware is not nil when off")
	}
	next := http.DefaultTransport
	if Transport("x", next) != next {
		t.Error("Transport wraps when off")
	}
}

func TestSetupRefusesGRPC(t *testing.T) {
	t.Setenv(EnvEndpoint, "http://127.0.0.1:4317")
	t.Setenv(EnvProtocol, "grpc")
	if _, err := Setup(context.Background(), "serve", nil); err == nil || Enabled() {
		t.Fatalf("grpc protocol: err %v, enabled %v", err, Enabled())
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://collector:4318":                "http://collector:4318",
		"https://user:secret@collector:4318/x": "https://collector:4318/x",
		"https://collector:4318/v1/traces?k=v": "https://collector:4318/v1/traces",
		"http://a@b@collector:4318#frag":       "http://collector:4318",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONRPCMethod(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"getLatestBlockhash","params":[]}`: "getLatestBlockhash",
		`{"method":"sendTransaction"}`:                                       "sendTransaction",
		`{"id":1}`:                                                           "",
		`{"method":"` + string(bytes.Repeat([]byte("a"), 100)) + `"}`:        "",
		`{"method":"unterminated`:                                            "",
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", bytes.NewReader([]byte(body)))
		if got := jsonRPCMethod(req); got != want {
			t.Errorf("jsonRPCMethod(%q) = %q, want %q", body, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	if got := jsonRPCMethod(req); got != "" {
		t.Errorf("no body: %q", got)
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := WithTraceparent(context.Background(), tp)
	if got := Traceparent(ctx); got != tp {
		t.Fatalf("Traceparent(WithTraceparent(%q)) = %q", tp, got)
	}
	for _, bad := range []string{"", "00-zz-00f067aa0ba902b7-01", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if got := Traceparent(WithTraceparent(context.Background(), bad)); got != "" {
			t.Errorf("malformed %q carried as %q", bad, got)
		}
	}
}

// A traceparent kept for later (an outbox row, a stream message) is
// bounded: only a well-formed version-00 one naming a valid span survives,
// and only it makes a link.
func TestCleanTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := CleanTraceparent(tp); got != tp {
		t.Fatalf("CleanTraceparent(%q) = %q", tp, got)
	}
	if l, ok := Link(tp); !ok || l.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		l.SpanContext.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("Link(%q) = %+v, %v", tp, l, ok)
	}
	for _, bad := range []string{"", "garbage", strings.ToUpper(tp), tp + "-extra", tp[:54],
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e47zz-00f067aa0ba902b7-01",
		"00-" + strings.Repeat("a", 8000)} {
		if got := CleanTraceparent(bad); got != "" {
			t.Errorf("CleanTraceparent(%.60q) = %q, want \"\"", bad, got)
		}
		if _, ok := Link(bad); ok {
			t.Errorf("Link(%.60q) made a link", bad)
		}
	}
}

func TestValidateNamesEveryBadVariable(t *testing.T) {
	on := map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}
	with := func(kv ...string) func(string) string {
		env := map[string]string{}
		for k, v := range on {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return func(k string) string { return env[k] }
	}
	for _, c := range []struct {
		env  func(string) string
		want []string // the variables named; none: valid
	}{
		{with(), nil},
		{with("OTEL_TRACES_SAMPLER", "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG", "0.25"), nil},
		{with("OTEL_TRACES_SAMPLER", "ALWAYS_OFF", "OTEL_BSP_MAX_QUEUE_SIZE", "4096"), nil},
		{with(EnvTracesProtocol, "http/protobuf", EnvProtocol, "grpc"), nil}, // the traces' own wins
		{with(EnvEndpoint, "::::"), []string{EnvEndpoint}},
		{with(EnvTracesEndpoint, "collector:4318"), []string{EnvTracesEndpoint}},
		{with("OTEL_TRACES_SAMPLER", "bogus"), []string{"OTEL_TRACES_SAMPLER"}},
		{with("OTEL_TRACES_SAMPLER_ARG", "7"), []string{"OTEL_TRACES_SAMPLER_ARG"}},
		{with("OTEL_TRACES_SAMPLER_ARG", "half"), []string{"OTEL_TRACES_SAMPLER_ARG"}},
		{with(EnvProtocol, "grpc"), []string{EnvProtocol}},
		{with("OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "OTEL_BSP_SCHEDULE_DELAY", "-1", "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
			[]string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_BSP_SCHEDULE_DELAY", "OTEL_EXPORTER_OTLP_COMPRESSION"}},
		{with(EnvEndpoint, "::::", "OTEL_TRACES_SAMPLER", "bogus", "OTEL_TRACES_SAMPLER_ARG", "7"),
			[]string{EnvEndpoint, "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}},
		// Tracing off: nothing of it is read.
		{func(k string) string { return map[string]string{"OTEL_TRACES_SAMPLER": "bogus"}[k] }, nil},
	} {
		err := Validate(c.env)
		if (err == nil) != (len(c.want) == 0) {
			t.Errorf("want %v named, got %v", c.want, err)
			continue
		}
		for _, name := range c.want {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%v does not name %s", err, name)
			}
		}
	}
}
