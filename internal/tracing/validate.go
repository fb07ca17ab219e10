package tracing

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// samplers are the OTEL_TRACES_SAMPLER values the SDK implements.
var samplers = map[string]bool{
	"always_on": true, "always_off": true, "traceidratio": true,
	"parentbased_always_on": true, "parentbased_always_off": true, "parentbased_traceidratio": true,
}

// Validate checks the OpenTelemetry variables a process with tracing on
// reads, naming every bad one, as every other setting is checked: the SDK
// itself would fall back to its defaults without a word (a sampler it does
// not know samples everything; a ratio of 7 is read as 1). With tracing
// off (see Configured) it checks nothing.
func Validate(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	if !Configured(getenv) {
		return nil
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	for _, k := range []string{EnvEndpoint, EnvTracesEndpoint} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(k, "want an http(s) URL of the collector (http://collector:4318), got %q", redact(v))
			}
		}
	}
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} { // the traces' own wins
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				bad(k, "attestd exports traces over OTLP/HTTP only (http/protobuf), got %q", p)
			}
			break
		}
	}
	sampler := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	if sampler != "" && !samplers[sampler] {
		bad("OTEL_TRACES_SAMPLER", "want one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got %q", sampler)
	}
	if v := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); v != "" {
		if r, err := strconv.ParseFloat(v, 64); err != nil || r < 0 || r > 1 {
			bad("OTEL_TRACES_SAMPLER_ARG", "want the ratio of traces sampled, from 0 to 1, got %q", v)
		}
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_BSP_SCHEDULE_DELAY",
		"OTEL_BSP_EXPORT_TIMEOUT", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n <= 0 {
				bad(k, "want a whole number above 0, got %q", v)
			}
		}
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"} {
		if v := strings.TrimSpace(getenv(k)); v != "" && v != "gzip" && v != "none" {
			bad(k, "want gzip or none, got %q", v)
		}
	}
	return errors.Join(errs...)
}
