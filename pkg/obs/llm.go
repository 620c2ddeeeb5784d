package obs

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Model is a chat model that measures, traces and logs every call of the
// model it wraps: latency and outcome per call, time to the first piece of
// a stream, tokens in and out, one span per call (named "chat NAME", with
// the OpenTelemetry gen_ai attributes).
type Model struct {
	name string
	m    llm.Model
	o    *Observer
}

var _ llm.Model = (*Model)(nil)

// Model wraps m, registered under name (the metrics' model label).
func (o *Observer) Model(name string, m llm.Model) *Model { return &Model{name: name, m: m, o: o} }

// InstrumentRegistry replaces every model of r by its instrumented wrapper
// (models already wrapped are left as they are). Call it once, after the
// models are added.
func (o *Observer) InstrumentRegistry(r *llm.Registry) {
	for _, name := range r.Names() {
		m, _, err := r.Get(name)
		if err != nil {
			continue
		}
		if _, ok := m.(*Model); ok {
			continue
		}
		r.Add(name, o.Model(name, m))
	}
}

// Unwrap returns the wrapped model.
func (m *Model) Unwrap() llm.Model { return m.m }

// Extractive reports whether the wrapped model is extractive (the offline
// model), so llm.IsExtractive sees through the wrapper.
func (m *Model) Extractive() bool { return llm.IsExtractive(m.m) }

// Complete calls the wrapped model's Complete.
func (m *Model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.call(ctx, req, nil, func(ctx context.Context, _ func(string) error) (llm.Response, error) {
		return m.m.Complete(ctx, req)
	})
}

// Stream calls the wrapped model's Stream.
func (m *Model) Stream(ctx context.Context, req llm.Request, fn func(delta string) error) (llm.Response, error) {
	if fn == nil {
		fn = func(string) error { return nil }
	}
	return m.call(ctx, req, fn, func(ctx context.Context, fn func(string) error) (llm.Response, error) {
		return m.m.Stream(ctx, req, fn)
	})
}

// Generate calls the wrapped model's Generate (llm.AsGenerator: g reaches
// a model that reads groundings), measured as a stream when fn is set and
// as a completion otherwise.
func (m *Model) Generate(ctx context.Context, req llm.Request, g llm.Grounding, fn func(delta string) error) (llm.Response, error) {
	return m.call(ctx, req, fn, func(ctx context.Context, fn func(string) error) (llm.Response, error) {
		return llm.AsGenerator(m.m).Generate(ctx, req, g, fn)
	})
}

// call measures do: a stream when fn is set (do gets fn, noting the first
// piece), a completion otherwise (do gets nil).
func (m *Model) call(ctx context.Context, req llm.Request, fn func(string) error, do func(context.Context, func(string) error) (llm.Response, error)) (llm.Response, error) {
	op := "complete"
	if fn != nil {
		op = "stream"
	}
	ctx, span, start := m.begin(ctx, op, req)
	var first time.Duration
	var wrapped func(string) error
	if fn != nil {
		var once sync.Once
		wrapped = func(d string) error {
			once.Do(func() {
				first = time.Since(start)
				span.AddEvent("first_token")
			})
			return fn(d)
		}
	}
	resp, err := do(ctx, wrapped)
	m.end(ctx, span, op, start, first, resp, err)
	return resp, err
}

func (m *Model) begin(ctx context.Context, op string, req llm.Request) (context.Context, trace.Span, time.Time) {
	// A model call inside a retrieving answerer ends its retrieval.
	markRetrieved(ctx)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", m.name),
		attribute.Bool("mixchat.llm.stream", op == "stream"),
		attribute.Int("mixchat.llm.messages", len(req.Messages)),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", float64(*req.Temperature)))
	}
	ctx, span := m.o.tracer.Start(ctx, "chat "+m.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, span, time.Now()
}

func (m *Model) end(ctx context.Context, span trace.Span, op string, start time.Time, first time.Duration, resp llm.Response, err error) {
	d := time.Since(start)
	out := outcome(ctx, err)
	met := m.o.metrics
	met.llmCalls.WithLabelValues(m.name, op, out).Observe(d.Seconds())
	if first > 0 {
		met.llmFirstToken.WithLabelValues(m.name).Observe(first.Seconds())
	}
	u := resp.Usage
	if u.PromptTokens > 0 {
		met.tokens.WithLabelValues(m.name, "input").Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		met.tokens.WithLabelValues(m.name, "output").Add(float64(u.CompletionTokens))
	}
	span.SetAttributes(
		attribute.String("gen_ai.response.model", resp.Model),
		attribute.Int("gen_ai.usage.input_tokens", u.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", u.CompletionTokens),
		attribute.Bool("mixchat.llm.usage_estimated", u.Estimated),
		attribute.Bool("mixchat.llm.extractive", resp.Extractive),
		attribute.String("mixchat.outcome", out),
	)
	if resp.FinishReason != "" {
		span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{resp.FinishReason}))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	m.o.log.DebugContext(ctx, "llm call", "model", m.name, "op", op, "outcome", out,
		"ms", float64(d.Microseconds())/1000, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens)
}
