// Package obs is mixchat's observability outside HTTP: Prometheus
// collectors, an slog.Handler that stamps log lines with the request id and
// trace id the context carries, OpenTelemetry tracing set-up, wrappers that
// measure and trace chat models (tokens in and out per model), answerers
// (latency, failures, retrieval time) and search engine requests, and the
// per-message usage record (tokens, latency, price) stored with each turn.
//
// The wrappers keep prometheus and OpenTelemetry out of the packages they
// measure: cmd/mixchat wraps the configured models and answerers once, and
// the server's middleware uses the same Observer for its request metrics,
// request ids and spans.
package obs

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerName names the tracer of every span mixchat makes.
const TracerName = "github.com/mixchat/mixchat"

// Options configure an Observer; the zero value is valid.
type Options struct {
	// Registry receives the collectors and is what the metrics handler
	// serves; nil means NewRegistry().
	Registry *prometheus.Registry
	// Tracing provides the spans; nil means none (a no-op provider).
	Tracing trace.TracerProvider
	// Prices price each reply's tokens; nil prices nothing.
	Prices Prices
	// Log receives a debug line per model call and answerer and a warning
	// per failed answerer, each carrying the request id; nil means none.
	Log *slog.Logger
}

// Observer measures, traces and logs what mixchat does. It is safe for
// concurrent use.
type Observer struct {
	reg     *prometheus.Registry
	metrics *Metrics
	tracer  trace.Tracer
	prices  Prices
	log     *slog.Logger
}

// New returns an Observer registering its collectors with o.Registry.
func New(o Options) *Observer {
	if o.Registry == nil {
		o.Registry = NewRegistry()
	}
	tp := o.Tracing
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &Observer{reg: o.Registry, metrics: NewMetrics(o.Registry), tracer: tp.Tracer(TracerName),
		prices: o.Prices, log: Logger(o.Log)}
}

// Metrics returns the collectors.
func (o *Observer) Metrics() *Metrics { return o.metrics }

// Tracer returns the tracer spans are made with.
func (o *Observer) Tracer() trace.Tracer { return o.tracer }

// Prices returns the configured prices.
func (o *Observer) Prices() Prices { return o.prices }

// Registry returns the Prometheus registry.
func (o *Observer) Registry() *prometheus.Registry { return o.reg }

// Handler serves the registry's metrics in the Prometheus text format
// (OpenMetrics when the scraper asks for it).
func (o *Observer) Handler() http.Handler {
	return promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{Registry: o.reg, EnableOpenMetrics: true})
}

// Outcomes of a measured call.
const (
	OutcomeOK       = "ok"
	OutcomeError    = "error"
	OutcomeTimeout  = "timeout"
	OutcomeCanceled = "canceled"
)

// outcome classifies the end of a call made under ctx: a context that ran
// out of time is a timeout, one cancelled otherwise (the client went away,
// another step failed) is canceled.
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return OutcomeTimeout
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return OutcomeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	}
	return OutcomeError
}
