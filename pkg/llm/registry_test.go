package llm_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// fakeModel is a Model whose behaviour is its function field.
type fakeModel struct {
	complete func(req llm.Request) (llm.Response, error)
}

func (f fakeModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	return f.complete(req)
}

func (f fakeModel) Stream(_ context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	resp, err := f.complete(req)
	if err == nil {
		err = fn(resp.Text)
	}
	return resp, err
}

func answering(text string) fakeModel {
	return fakeModel{complete: func(llm.Request) (llm.Response, error) { return llm.Response{Text: text}, nil }}
}

func TestRegistry(t *testing.T) {
	r := llm.NewRegistry("deepseek")
	r.Add("offline", grounded{})
	r.Add("deepseek", answering("from deepseek"))
	r.Add("qwen", answering("from qwen"))

	if got := r.Names(); !slices.Equal(got, []string{"deepseek", "offline", "qwen"}) {
		t.Errorf("Names() = %v", got)
	}
	if r.Default() != "deepseek" {
		t.Errorf("Default() = %q", r.Default())
	}
	tests := []struct{ ask, want string }{{"", "deepseek"}, {"qwen", "qwen"}, {"offline", "offline"}}
	for _, tt := range tests {
		_, name, err := r.Get(tt.ask)
		if err != nil || name != tt.want {
			t.Errorf("Get(%q) = %q, %v; want %q", tt.ask, name, err, tt.want)
		}
	}

	_, _, err := r.Get("gpt-9")
	var unknown *llm.UnknownModelError
	if !errors.As(err, &unknown) || unknown.Name != "gpt-9" || !slices.Equal(unknown.Known, []string{"deepseek", "offline", "qwen"}) {
		t.Fatalf("Get(unknown) error = %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "gpt-9") || !strings.Contains(msg, "deepseek, offline, qwen") {
		t.Errorf("message %q does not name the model and the configured ones", msg)
	}

	for name, want := range map[string]llm.ModelInfo{
		"":        {Name: "deepseek", Default: true},
		"offline": {Name: "offline", Extractive: true},
		"qwen":    {Name: "qwen"},
	} {
		if got, err := r.Info(name); err != nil || got != want {
			t.Errorf("Info(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := r.Info("nope"); !errors.As(err, &unknown) {
		t.Errorf("Info(unknown) error = %v", err)
	}
}

func TestRegistryRoutesRequests(t *testing.T) {
	r := llm.NewRegistry("")
	r.Add("a", answering("from a"))
	r.Add("b", answering("from b"))
	if r.Default() != "a" {
		t.Errorf("default of an unnamed default = %q, want the first added", r.Default())
	}
	resp, err := r.Complete(context.Background(), llm.Request{Model: "b"})
	if err != nil || resp.Text != "from b" || resp.Model != "b" {
		t.Errorf("Complete(model b) = %+v, %v", resp, err)
	}
	var got string
	resp, err = r.Stream(context.Background(), llm.Request{}, func(d string) error { got += d; return nil })
	if err != nil || got != "from a" || resp.Model != "a" {
		t.Errorf("Stream(default) = %+v, %q, %v", resp, got, err)
	}
	if _, err := r.Complete(context.Background(), llm.Request{Model: "c"}); err == nil {
		t.Error("Complete(unknown model) gave no error")
	}

	empty := llm.NewRegistry("")
	_, _, err = empty.Get("")
	if err == nil || !strings.Contains(err.Error(), "no models") {
		t.Errorf("empty registry: %v", err)
	}
}
