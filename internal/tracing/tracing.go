package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/attestd/attestd/internal/buildinfo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName names the instrumentation scope of every span attestd makes.
const ScopeName = "github.com/attestd/attestd"

// The environment variables read here (the exporter and the SDK read the
// other standard OTEL_* variables themselves: see docs/configuration.md).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	EnvServiceName    = "OTEL_SERVICE_NAME"
)

// ShutdownTimeout bounds the flush of the spans still buffered when a
// process stops.
const ShutdownTimeout = 5 * time.Second

var (
	on     atomic.Bool
	tracer atomic.Pointer[trace.Tracer]
	prop   = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
)

// Enabled reports whether a tracer provider is installed: callers take
// their traced branch only then.
func Enabled() bool { return on.Load() }

// Configured reports whether getenv asks for tracing: an OTLP endpoint is
// set and OTEL_SDK_DISABLED is not true.
func Configured(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvTracesExporter)), "none") {
		return false
	}
	return strings.TrimSpace(getenv(EnvEndpoint)) != "" || strings.TrimSpace(getenv(EnvTracesEndpoint)) != ""
}

// Setup installs the global tracer provider when the environment asks for
// tracing (see Configured), for a process of the given role (serve,
// index, worker, local): its service.name is attestd-<role> unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another. The
// returned stop flushes the buffered spans within ShutdownTimeout and
// uninstalls the provider; it is never nil. Off, Setup does nothing.
func Setup(ctx context.Context, role string, log *slog.Logger) (stop func(), err error) {
	if !Configured(os.Getenv) {
		return func() {}, nil
	}
	if log == nil {
		log = slog.Default()
	}
	if err := Validate(os.Getenv); err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	// Later options win: the environment's service name and attributes
	// override the defaults.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(attribute.String("service.name", "attestd-"+role),
			attribute.String("service.version", buildinfo.Version), attribute.String("attestd.process", role)),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	// The sampler comes from OTEL_TRACES_SAMPLER[_ARG] (default: parent
	// based, always on), the batching from OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	install(tp)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	endpoint := os.Getenv(EnvTracesEndpoint)
	if endpoint == "" {
		endpoint = os.Getenv(EnvEndpoint)
	}
	log.Info("tracing on", "endpoint", redact(endpoint), "service", serviceName(res))
	return func() {
		uninstall()
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			log.Warn("tracing: spans not flushed at shutdown", "err", err)
		}
	}, nil
}

func install(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(prop)
	t := tp.Tracer(ScopeName, trace.WithInstrumentationVersion(buildinfo.Version))
	tracer.Store(&t)
	on.Store(true)
}

func uninstall() {
	on.Store(false)
	t := trace.Tracer(noop.NewTracerProvider().Tracer(ScopeName))
	tracer.Store(&t)
	otel.SetTracerProvider(noop.NewTracerProvider())
}

func serviceName(r *resource.Resource) string {
	v, _ := r.Set().Value("service.name")
	return v.AsString()
}

// redact keeps an endpoint's scheme, host and path (never credentials or
// a query).
func redact(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			rest = rest[at+1:]
		}
		u = u[:i+3] + rest
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return u
}

// Tracer is attestd's tracer (a no-op one when tracing is off).
func Tracer() trace.Tracer {
	if t := tracer.Load(); t != nil {
		return *t
	}
	return noop.NewTracerProvider().Tracer(ScopeName)
}

// Start starts a span named name, a child of ctx's span. Callers check
// Enabled first on hot paths.
func Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
