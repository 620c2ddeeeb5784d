package llm_test

import (
	"context"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// grounded is a model that reads groundings, as the extractive model
// does: it answers with the grounding's question and ignores the prompt.
type grounded struct{}

func (grounded) Extractive() bool { return true }

func (grounded) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Text: "messages only"}, nil
}

func (grounded) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	return llm.Response{Text: "messages only"}, nil
}

func (grounded) Generate(_ context.Context, _ llm.Request, g llm.Grounding, fn func(string) error) (llm.Response, error) {
	if fn != nil {
		if err := fn(g.Question); err != nil {
			return llm.Response{}, err
		}
	}
	return llm.Response{Text: g.Question, Extractive: true}, nil
}

// TestAsGenerator: a model that reads groundings gets the grounding; any
// other model gets the prompt, streamed when a callback is given.
func TestAsGenerator(t *testing.T) {
	ctx := context.Background()
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "the prompt"}}}
	g := llm.Grounding{Question: "the question"}
	echo := fakeModel{complete: func(req llm.Request) (llm.Response, error) {
		return llm.Response{Text: req.Messages[len(req.Messages)-1].Content}, nil
	}}
	for _, tt := range []struct {
		name   string
		m      llm.Model
		stream bool
		want   string
	}{
		{"model, complete", echo, false, "the prompt"},
		{"model, stream", echo, true, "the prompt"},
		{"grounded, complete", grounded{}, false, "the question"},
		{"grounded, stream", grounded{}, true, "the question"},
	} {
		var fn func(string) error
		var streamed string
		if tt.stream {
			fn = func(d string) error { streamed += d; return nil }
		}
		resp, err := llm.AsGenerator(tt.m).Generate(ctx, req, g, fn)
		if err != nil || resp.Text != tt.want || (tt.stream && streamed != tt.want) {
			t.Errorf("%s: %q (streamed %q), %v; want %q", tt.name, resp.Text, streamed, err, tt.want)
		}
	}
	if _, ok := llm.AsGenerator(echo).(llm.ModelGenerator); !ok {
		t.Error("a model that does not read groundings is not wrapped in a ModelGenerator")
	}
}

// TestRegistryGenerates: the registry passes the grounding to the model
// the request names.
func TestRegistryGenerates(t *testing.T) {
	r := llm.NewRegistry("m")
	r.Add("m", answering("from m"))
	r.Add("offline", grounded{})
	g := llm.Grounding{Question: "the question"}
	for _, tt := range []struct{ model, want string }{{"", "from m"}, {"offline", "the question"}} {
		resp, err := r.Generate(context.Background(), llm.Request{Model: tt.model}, g, nil)
		if err != nil || resp.Text != tt.want || resp.Model == "" {
			t.Errorf("model %q: %+v, %v; want %q", tt.model, resp, err, tt.want)
		}
	}
	if _, err := r.Generate(context.Background(), llm.Request{Model: "nope"}, g, nil); err == nil {
		t.Error("unknown model: no error")
	}
}
