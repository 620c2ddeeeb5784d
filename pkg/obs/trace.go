package obs

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TelemetryConfig is the "telemetry" section of mixchat's configuration:
// where traces go. Metrics are always served on /metrics.
type TelemetryConfig struct {
	// OTLPEndpoint is the OTLP/HTTP collector traces are sent to, e.g.
	// http://otel-collector:4318 (the path defaults to /v1/traces). Empty
	// means the standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT variables, and when neither is set
	// tracing is off.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// ServiceName is the service.name resource attribute (OTEL_SERVICE_NAME
	// overrides it).
	ServiceName string `yaml:"service_name"`
	// SampleRatio is the share of new traces recorded, 0 to 1; a request
	// arriving with a sampled traceparent is always recorded.
	SampleRatio float64 `yaml:"sample_ratio"`
}

// DefaultTelemetryConfig returns the defaults: tracing off unless the
// environment names a collector, every trace sampled.
func DefaultTelemetryConfig() TelemetryConfig {
	return TelemetryConfig{ServiceName: "mixchat", SampleRatio: 1}
}

// Validate checks c; every message names the field (under "telemetry.").
func (c TelemetryConfig) Validate() error {
	var errs []error
	if c.OTLPEndpoint != "" {
		if _, err := tracesURL(c.OTLPEndpoint); err != nil {
			errs = append(errs, fmt.Errorf("config: telemetry.otlp_endpoint: %q is not valid; want an http(s) URL such as http://otel-collector:4318: %w", c.OTLPEndpoint, err))
		}
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("config: telemetry.sample_ratio: %v is not valid; want 0 to 1", c.SampleRatio))
	}
	return errors.Join(errs...)
}

// tracesURL turns an OTLP/HTTP base URL into the traces URL: the path
// /v1/traces is added when the URL has none.
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("the scheme must be http or https")
	}
	if u.Host == "" {
		return "", errors.New("no host")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Tracing is the process's trace pipeline: a provider exporting to an OTLP
// collector, or a no-op one when tracing is off.
type Tracing struct {
	// Provider makes the spans; pass it in Options.Tracing.
	Provider trace.TracerProvider
	// Endpoint is where spans go ("" when tracing is off), for the
	// start-up log line.
	Endpoint string
	sdk      *sdktrace.TracerProvider
}

// SetupTracing builds the trace pipeline for c. getenv reads the standard
// OpenTelemetry variables (pass os.Getenv): OTEL_SDK_DISABLED=true turns
// tracing off; when c.OTLPEndpoint is empty, OTEL_EXPORTER_OTLP_*_ENDPOINT
// and the exporter's other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout) apply. No connection is made here; spans are exported in
// batches in the background. Call Shutdown before the process exits to
// flush them.
func SetupTracing(ctx context.Context, c TelemetryConfig, version string, getenv func(string) string) (*Tracing, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	off := &Tracing{Provider: noop.NewTracerProvider()}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	var opts []otlptracehttp.Option
	endpoint := ""
	switch {
	case c.OTLPEndpoint != "":
		u, _ := tracesURL(c.OTLPEndpoint)
		opts = append(opts, otlptracehttp.WithEndpointURL(u))
		endpoint = u
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		endpoint = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	default:
		return off, nil
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	name := c.ServiceName
	if name == "" {
		name = "mixchat"
	}
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		name = n
	}
	res := resource.NewSchemaless(attribute.String("service.name", name), attribute.String("service.version", version))
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
	)
	return &Tracing{Provider: sdk, Endpoint: endpoint, sdk: sdk}, nil
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t.sdk != nil }

// Shutdown flushes the spans not yet exported and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}
