package auth

import (
	"context"
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
)

// MeteredModel charges every call of a model to the request's Meter (the
// key's tokens-per-minute limit): the prompt's tokens, counted locally,
// when the call starts, and what was produced when it ends — the
// upstream's usage when it reports one, else the reply's tokens counted
// locally, also when the stream was cut before its final usage chunk or
// the client went away. Calls without a Meter (authentication off, no
// limit) pass straight through.
type MeteredModel struct {
	m   llm.Model
	tok *llm.Tokenizer
}

var _ llm.Model = (*MeteredModel)(nil)

// NewMeteredModel wraps m; name picks the tokenizer (llm.NewTokenizer).
func NewMeteredModel(name string, m llm.Model) *MeteredModel {
	return &MeteredModel{m: m, tok: llm.NewTokenizer(name)}
}

// MeterRegistry replaces every model of r by its metered wrapper (models
// already metered are left as they are). Call it once, after the models
// are added (and instrumented).
func MeterRegistry(r *llm.Registry) {
	for _, name := range r.Names() {
		m, _, err := r.Get(name)
		if err != nil {
			continue
		}
		if _, ok := m.(*MeteredModel); !ok {
			r.Add(name, NewMeteredModel(name, m))
		}
	}
}

// Unwrap returns the wrapped model.
func (m *MeteredModel) Unwrap() llm.Model { return m.m }

// Extractive reports whether the wrapped model is extractive, so
// llm.IsExtractive sees through the wrapper.
func (m *MeteredModel) Extractive() bool { return llm.IsExtractive(m.m) }

// Complete calls the wrapped model's Complete.
func (m *MeteredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return m.call(ctx, req, nil, func(ctx context.Context, _ func(string) error) (llm.Response, error) {
		return m.m.Complete(ctx, req)
	})
}

// Stream calls the wrapped model's Stream.
func (m *MeteredModel) Stream(ctx context.Context, req llm.Request, fn func(delta string) error) (llm.Response, error) {
	if fn == nil {
		fn = func(string) error { return nil }
	}
	return m.call(ctx, req, fn, func(ctx context.Context, fn func(string) error) (llm.Response, error) {
		return m.m.Stream(ctx, req, fn)
	})
}

// Generate calls the wrapped model's Generate (llm.AsGenerator: g reaches
// a model that reads groundings), metered like Stream or Complete.
func (m *MeteredModel) Generate(ctx context.Context, req llm.Request, g llm.Grounding, fn func(delta string) error) (llm.Response, error) {
	return m.call(ctx, req, fn, func(ctx context.Context, fn func(string) error) (llm.Response, error) {
		return llm.AsGenerator(m.m).Generate(ctx, req, g, fn)
	})
}

// call meters do: fn, when set, is wrapped to count what streams.
func (m *MeteredModel) call(ctx context.Context, req llm.Request, fn func(string) error, do func(context.Context, func(string) error) (llm.Response, error)) (llm.Response, error) {
	meter, prompt := m.start(ctx, req)
	if meter == nil {
		return do(ctx, fn)
	}
	if fn == nil {
		resp, err := do(ctx, nil)
		m.finish(meter, prompt, resp, resp.Text)
		return resp, err
	}
	var got strings.Builder
	resp, err := do(ctx, func(d string) error {
		got.WriteString(d)
		return fn(d)
	})
	m.finish(meter, prompt, resp, got.String())
	return resp, err
}

// start charges the prompt of req to ctx's Meter, if any.
func (m *MeteredModel) start(ctx context.Context, req llm.Request) (*Meter, int64) {
	meter, ok := ctx.Value(meterKey{}).(*Meter)
	if !ok {
		return nil, 0
	}
	prompt := int64(m.tok.CountMessages(req.Messages))
	meter.spend(prompt)
	return meter, prompt
}

// finish charges what the call produced: the reported usage beyond the
// prompt already charged, or the produced text counted locally.
func (m *MeteredModel) finish(meter *Meter, prompt int64, resp llm.Response, produced string) {
	if meter == nil {
		return
	}
	if u := resp.Usage; u.TotalTokens > 0 && !u.Estimated {
		meter.spend(max(int64(u.TotalTokens)-prompt, int64(u.CompletionTokens)))
		return
	}
	if produced == "" {
		produced = resp.Text
	}
	meter.spend(int64(m.tok.Count(produced)))
}
