package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/golden"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestModelRewritesFollowUps: with an OpenAI-compatible model configured,
// the app as served asks the model to rewrite every follow-up — one that
// names its subject too — and the standalone question is exactly the
// model's reply; the rewrite prompt is the golden one. No offline part of
// memory is made, so none runs.
func TestModelRewritesFollowUps(t *testing.T) {
	var mu sync.Mutex
	made := 0
	defer func(f func(extractive.Vocabulary, llm.TokenCounter) languageParts) { offlineParts = f }(offlineParts)
	offlineParts = func(extractive.Vocabulary, llm.TokenCounter) languageParts {
		mu.Lock()
		made++
		mu.Unlock()
		return languageParts{rewriter: mustNotRun{t}, summarizer: mustNotRun{t}, extractor: mustNotRun{t}}
	}

	// The model's rewrites, by the follow-up asked: what the model decides,
	// whatever an offline rule would make of the question.
	rewrites := map[string]string{
		"And on Sundays?":                     "When does the Golden Wok open on Sundays?",
		"Does the Golden Wok have a terrace?": "Does the Golden Wok restaurant on Mill Road have a terrace?",
	}
	up := llmtest.NewServer(t, llmtest.WithHandler(func(req openai.ChatCompletionRequest) llmtest.Reply {
		p := req.Messages[len(req.Messages)-1].Content
		if i := strings.LastIndex(p, "Follow-up question: "); i >= 0 {
			q := strings.TrimSpace(p[i+len("Follow-up question: "):])
			return llmtest.Reply{Text: "FACTS:\n- The Golden Wok opens at noon.\nQUESTION: " + rewrites[q]}
		}
		return llmtest.Reply{Text: "The Golden Wok opens at noon."}
	}))

	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.APIKey = up.URL(), "test-model", "test"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.KB.Create(ctx, "food", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.KB.AddFiles(ctx, "food", []kb.FileData{{Name: "golden-wok.md",
		Data: []byte("# Golden Wok\n\nThe Golden Wok on Mill Road opens at noon, Sundays at one.\n")}}, kb.AddOptions{}, nil); err != nil || len(res.Failed) > 0 {
		t.Fatalf("add files: %+v, %v", res, err)
	}
	hs := httptest.NewServer(a.Server.Handler())
	defer hs.Close()

	ask := func(q string) string {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"query": q, "conversation_id": "c", "stream": false, "knowledge_base_name": "food"})
		resp, err := hs.Client().Post(hs.URL+"/chat/mix_chat", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out struct {
			Standalone string `json:"standalone"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("mix_chat %q: %d %s", q, resp.StatusCode, raw)
		}
		if err := a.Memory.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		return out.Standalone
	}
	condenseCalls := func() []string {
		var out []string
		for _, r := range up.Requests() {
			if p := r.Messages[len(r.Messages)-1].Content; strings.Contains(p, "Follow-up question: ") {
				out = append(out, p)
			}
		}
		return out
	}

	if got := ask("When does the Golden Wok open?"); got != "" || len(condenseCalls()) != 0 {
		t.Errorf("the first question was rewritten (%q, %d calls); it has no history", got, len(condenseCalls()))
	}
	for i, q := range []string{"And on Sundays?", "Does the Golden Wok have a terrace?"} {
		if got := ask(q); got != rewrites[q] {
			t.Errorf("standalone of %q = %q, want the model's reply %q", q, got, rewrites[q])
		}
		if n := len(condenseCalls()); n != i+1 {
			t.Errorf("after %q: %d rewrite calls, want %d", q, n, i+1)
		}
	}
	calls := condenseCalls()
	if len(calls) == 0 {
		t.Fatal("no rewrite call reached the model")
	}
	golden.Check(t, filepath.Join("testdata", "rewrite_prompt.golden"), calls[len(calls)-1])
	if made != 0 {
		t.Errorf("the offline parts of memory were made %d times with a model configured", made)
	}
}

// TestOfflineRewritesFollowUps: with the offline model the offline parts
// are made, and they rewrite.
func TestOfflineRewritesFollowUps(t *testing.T) {
	made := 0
	defer func(f func(extractive.Vocabulary, llm.TokenCounter) languageParts) { offlineParts = f }(offlineParts)
	offlineParts = func(v extractive.Vocabulary, tc llm.TokenCounter) languageParts {
		made++
		return languageParts{rewriter: extractive.NewRewriter(v, tc), summarizer: extractive.NewSummarizer(tc), extractor: extractive.NewExtractor()}
	}
	_, hs := newFollowUpApp(t, "food", map[string]string{"golden-wok.md": "# Golden Wok\n\nThe Golden Wok opens at noon.\n"})
	kbChatTop(t, hs, map[string]any{"query": "When does the Golden Wok open?", "conversation_id": "c", "knowledge_base_name": "food", "stream": false})
	if made != 1 {
		t.Errorf("offline parts made %d times, want 1", made)
	}
}

// mustNotRun fails the test when any of its methods runs.
type mustNotRun struct{ t *testing.T }

func (m mustNotRun) Rewrite(context.Context, memory.FollowUp) (memory.Condensed, error) {
	m.t.Error("an offline rewriter ran")
	return memory.Condensed{}, nil
}

func (m mustNotRun) Summarize(context.Context, string, []memory.Line, int) (string, error) {
	m.t.Error("an offline summarizer ran")
	return "", nil
}

func (m mustNotRun) Entities(context.Context, []memory.Line, []string) ([]memory.EntityFact, error) {
	m.t.Error("an offline extractor ran")
	return nil, nil
}

func (m mustNotRun) Triples(context.Context, []memory.Line) ([]memory.Triple, error) {
	m.t.Error("an offline extractor ran")
	return nil, nil
}

func (m mustNotRun) UserFacts(context.Context, []memory.Line, []string) ([]string, error) {
	m.t.Error("an offline extractor ran")
	return nil, nil
}
