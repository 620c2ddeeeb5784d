package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/rag"
)

// countingModel counts the calls of the model it wraps, whichever way it
// is called.
type countingModel struct {
	m     llm.Model
	calls atomic.Int32
}

func (c *countingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	c.calls.Add(1)
	return c.m.Complete(ctx, req)
}

func (c *countingModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	c.calls.Add(1)
	return c.m.Stream(ctx, req, fn)
}

func (c *countingModel) Generate(ctx context.Context, req llm.Request, g llm.Grounding, fn func(string) error) (llm.Response, error) {
	c.calls.Add(1)
	return llm.AsGenerator(c.m).Generate(ctx, req, g, fn)
}

// TestRealModelAnswersEveryTurn: with an OpenAI-compatible model
// configured, every chat endpoint's answers and fusion are the model's;
// the extractive model, still registered as "offline" for a request that
// names it, is never called.
func TestRealModelAnswersEveryTurn(t *testing.T) {
	up := llmtest.NewServer(t)
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = t.TempDir()
	cfg.LLM.BaseURL, cfg.LLM.Model = up.URL(), "real"
	offline := &countingModel{}
	a, err := New(context.Background(), cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Answerers: func(models *llm.Registry, _ map[string]rag.Answerer) {
			m, _, err := models.Get("offline")
			if err != nil {
				t.Fatal(err)
			}
			offline.m = m
			models.Add("offline", offline)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	hs := httptest.NewServer(a.Server.Handler())
	defer hs.Close()
	post := func(path, body string) {
		t.Helper()
		resp, err := hs.Client().Post(hs.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", path, resp.Status, b)
		}
	}
	for _, conv := range []string{"c1", "c2"} {
		post("/chat/chat", `{"query":"乾卦是什么？","conversation_id":"`+conv+`"}`)
		post("/chat/chat", `{"query":"它的彖传怎么说？","conversation_id":"`+conv+`"}`)
	}
	post("/chat/knowledge_base_chat", `{"query":"乾卦的卦辞是什么？","knowledge_base_name":"zhouyi","conversation_id":"k1"}`)
	post("/chat/knowledge_base_chat", `{"query":"那坤卦呢？","knowledge_base_name":"zhouyi","conversation_id":"k1"}`)
	post("/chat/search_engine_chat", `{"query":"什么是太极？"}`)
	post("/chat/mix_chat", `{"query":"乾卦的卦辞是什么？","conversation_id":"m1"}`)
	post("/chat/mix_chat", `{"query":"它的彖传怎么说？","conversation_id":"m1"}`)
	post("/chat/mix_chat", `{"query":"什么是太极？","fusion":"context"}`)
	if n := offline.calls.Load(); n != 0 {
		t.Errorf("the extractive model was called %d times with a real model configured", n)
	}
	if up.Calls() < 10 {
		t.Errorf("the real model was called %d times", up.Calls())
	}
}
