package chat

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/mixchat/mixchat/internal/golden"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

// fakeModel records the request and answers with text.
type fakeModel struct {
	text string
	err  error
	got  llm.Request
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.got = req
	return llm.Response{Text: m.text, Model: req.Model}, m.err
}

func (m *fakeModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	m.got = req
	for _, r := range m.text {
		if err := fn(string(r)); err != nil {
			return llm.Response{Text: m.text, Model: req.Model}, err
		}
	}
	return llm.Response{Text: m.text, Model: req.Model}, m.err
}

type models map[string]llm.Model

func (ms models) Get(name string) (llm.Model, string, error) {
	if name == "" {
		name = "m"
	}
	m, ok := ms[name]
	if !ok {
		return nil, "", &llm.UnknownModelError{Name: name, Known: []string{"m"}}
	}
	return m, name, nil
}

var history = []llm.Message{
	{Role: llm.RoleSystem, Content: "Previously, the user talked about 乾卦."},
	{Role: llm.RoleUser, Content: "我的名字是李雷。"},
	{Role: llm.RoleAssistant, Content: "你好，李雷。"},
}

func TestRequestPrompts(t *testing.T) {
	a := New(models{}, Options{})
	tests := []struct {
		name   string
		q      rag.Query
		golden string
		msgs   int
	}{
		{"memory uses with_history", rag.Query{Text: "我叫什么名字？", History: history}, "with_history.golden", 2},
		{"no history uses default", rag.Query{Text: "乾卦是什么？"}, "default.golden", 1},
		{"default prompt sends history as messages", rag.Query{Text: "我叫什么名字？", History: history, PromptName: "default"}, "default_history.golden", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := a.Request(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Messages) != tt.msgs {
				t.Fatalf("%d messages, want %d: %+v", len(req.Messages), tt.msgs, req.Messages)
			}
			var b strings.Builder
			for _, m := range req.Messages {
				b.WriteString("[" + m.Role + "]\n" + m.Content + "\n")
			}
			golden(t, tt.golden, b.String())
			if req.Question != tt.q.Text {
				t.Errorf("Question hint = %q", req.Question)
			}
		})
	}
	// The prompt keeps the question as asked; the extractive model's hint
	// is the standalone question when the turn has one.
	req, err := a.Request(rag.Query{Text: "那九二呢？", Standalone: "乾卦的九二爻辞是什么？", History: history})
	if err != nil {
		t.Fatal(err)
	}
	if req.Question != "乾卦的九二爻辞是什么？" || !strings.Contains(req.Messages[len(req.Messages)-1].Content, "那九二呢？") {
		t.Errorf("with a standalone question: hint %q, prompt %q", req.Question, req.Messages[len(req.Messages)-1].Content)
	}
	if _, err := a.Request(rag.Query{Text: "x", PromptName: "nope"}); err == nil || !strings.Contains(err.Error(), "with_history") {
		t.Errorf("unknown prompt: %v, want an error listing the templates", err)
	}
}

func TestAnswer(t *testing.T) {
	m := &fakeModel{text: "你叫李雷。"}
	temp := float32(0.2)
	a := New(models{"m": m}, Options{Temperature: &temp, MaxTokens: 100})
	var streamed strings.Builder
	ans, err := a.Answer(context.Background(), rag.Query{Text: "我叫什么名字？", History: history, MaxTokens: 50}, func(d string) error {
		streamed.WriteString(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ans.From != "llm" || ans.Text != "你叫李雷。" || streamed.String() != ans.Text {
		t.Errorf("answer = %+v, streamed %q", ans, streamed.String())
	}
	if m.got.Model != "m" || *m.got.Temperature != 0.2 || m.got.MaxTokens != 50 {
		t.Errorf("request = model %q temperature %v max tokens %d; want the query's max tokens over the default", m.got.Model, *m.got.Temperature, m.got.MaxTokens)
	}
	if len(m.got.Context) != 3 || m.got.Context[1] != "Human: 我的名字是李雷。" {
		t.Errorf("context hint = %q", m.got.Context)
	}

	if _, err := a.Answer(context.Background(), rag.Query{Text: "x", Model: "gpt-9"}, nil); err == nil {
		t.Error("unknown model: no error")
	}
	m.err = errors.New("upstream down")
	if _, err := a.Answer(context.Background(), rag.Query{Text: "x"}, nil); err == nil || !strings.Contains(err.Error(), "llm chat: upstream down") {
		t.Errorf("upstream error = %v", err)
	}
	stop := errors.New("client gone")
	m.err = nil
	if _, err := a.Answer(context.Background(), rag.Query{Text: "x"}, func(string) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error = %v, want it returned", err)
	}
}
