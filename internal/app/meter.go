package app

import (
	"context"
	"strings"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/llm"
)

// meteredModel charges every call of a model to the request's auth.Meter
// (the key's tokens-per-minute limit): the prompt's tokens, counted
// locally, when the call starts, and what was produced when it ends — the
// upstream's usage when it reports one, else the reply's tokens counted
// locally, also when the stream was cut before its final usage chunk or
// the client went away. Calls without a Meter (authentication off, no
// limit) pass straight through.
type meteredModel struct {
	m   llm.Model
	tok *llm.Tokenizer
}

var _ llm.Model = (*meteredModel)(nil)

// newMeteredModel wraps m; name picks the tokenizer (llm.NewTokenizer).
func newMeteredModel(name string, m llm.Model) *meteredModel {
	return &meteredModel{m: m, tok: llm.NewTokenizer(name)}
}

// meterRegistry replaces every model of r by its metered wrapper (models
// already metered are left as they are). Call it once, after the models
// are added (and instrumented).
func meterRegistry(r *llm.Registry) {
	for _, name := range r.Names() {
		m, _, err := r.Get(name)
		if err != nil {
			continue
		}
		if _, ok := m.(*meteredModel); !ok {
			r.Add(name, newMeteredModel(name, m))
		}
	}
}

// Unwrap returns the wrapped model.
func (m *meteredModel) Unwrap() llm.Model { return m.m }

// Extractive reports whether the wrapped model is extractive, so
// llm.IsExtractive sees through the wrapper.
func (m *meteredModel) Extractive() bool { return llm.IsExtractive(m.m) }

// Complete calls the wrapped model's Complete.
func (m *meteredModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	metered, prompt := m.start(ctx, req)
	resp, err := m.m.Complete(ctx, req)
	if metered {
		m.finish(ctx, prompt, resp, resp.Text)
	}
	return resp, err
}

// Stream calls the wrapped model's Stream.
func (m *meteredModel) Stream(ctx context.Context, req llm.Request, fn func(delta string) error) (llm.Response, error) {
	metered, prompt := m.start(ctx, req)
	if !metered {
		return m.m.Stream(ctx, req, fn)
	}
	var got strings.Builder
	resp, err := m.m.Stream(ctx, req, func(d string) error {
		got.WriteString(d)
		if fn == nil {
			return nil
		}
		return fn(d)
	})
	m.finish(ctx, prompt, resp, got.String())
	return resp, err
}

// start charges the prompt of req to ctx's Meter, if it has one.
func (m *meteredModel) start(ctx context.Context, req llm.Request) (bool, int64) {
	if !auth.Metered(ctx) {
		return false, 0
	}
	prompt := int64(m.tok.CountMessages(req.Messages))
	auth.Spend(ctx, prompt)
	return true, prompt
}

// finish charges what the call produced: the reported usage beyond the
// prompt already charged, or the produced text counted locally.
func (m *meteredModel) finish(ctx context.Context, prompt int64, resp llm.Response, produced string) {
	if u := resp.Usage; u.TotalTokens > 0 && !u.Estimated {
		auth.Spend(ctx, max(int64(u.TotalTokens)-prompt, int64(u.CompletionTokens)))
		return
	}
	if produced == "" {
		produced = resp.Text
	}
	auth.Spend(ctx, int64(m.tok.Count(produced)))
}
