package tracing

import "github.com/attestd/attestd/internal/config"

// Vars are the standard OpenTelemetry variables a process honours (read
// here, or by the OTLP exporter and the SDK), as docs/configuration.md
// lists them.
var Vars = []config.Var{
	{Name: EnvEndpoint, Default: "(none: tracing off)", Help: "OTLP/HTTP collector base URL; spans go to <url>/v1/traces"},
	{Name: EnvTracesEndpoint, Default: "(none)", Help: "the traces URL itself (overrides the base URL)"},
	{Name: "OTEL_EXPORTER_OTLP_HEADERS", Default: "(none)", Help: "headers sent with each export, key=value,key=value"},
	{Name: "OTEL_EXPORTER_OTLP_TIMEOUT", Default: "10000", Help: "milliseconds one export may take"},
	{Name: "OTEL_EXPORTER_OTLP_COMPRESSION", Default: "(none)", Help: "gzip compresses exports"},
	{Name: EnvProtocol, Default: "http/protobuf", Help: "the only protocol attestd exports with"},
	{Name: EnvServiceName, Default: "attestd-<process>", Help: "service.name of the spans"},
	{Name: "OTEL_RESOURCE_ATTRIBUTES", Default: "(none)", Help: "more resource attributes, key=value,key=value"},
	{Name: "OTEL_TRACES_SAMPLER", Default: "parentbased_always_on", Help: "which requests are traced"},
	{Name: "OTEL_TRACES_SAMPLER_ARG", Default: "(none)", Help: "the sampler's ratio"},
	{Name: EnvTracesExporter, Default: "otlp", Help: "none turns tracing off"},
	{Name: EnvSDKDisabled, Default: "false", Help: "true turns tracing off"},
	{Name: "OTEL_BSP_SCHEDULE_DELAY", Default: "5000", Help: "milliseconds between exports"},
	{Name: "OTEL_BSP_MAX_QUEUE_SIZE", Default: "2048", Help: "spans buffered; beyond it new spans are dropped"},
	{Name: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", Default: "512", Help: "spans per export"},
}
