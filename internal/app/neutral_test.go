package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/mix"
)

// zhouyiWords are words only the Zhouyi demo would put in a prompt or a
// page.
var zhouyiWords = []string{"周易", "易学", "卦", "Zhouyi", "I Ching", "zhouyi"}

// TestNoDemoIsNeutral: with demo: false and an empty data directory,
// mix_chat answers with no knowledge base, its fusion prompt (recorded at
// the model) names nothing of the Zhouyi, list_knowledge_bases suggests no
// question, and the choice is remembered: a later start with the default
// demo: true makes no demo.
func TestNoDemoIsNeutral(t *testing.T) {
	ctx := context.Background()
	up := llmtest.NewServer(t)
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	cfg.LLM.BaseURL, cfg.LLM.Model = up.URL(), "test"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// A page for the offline search engine, so two answers are fused.
	if err := os.MkdirAll(cfg.SearchLocalDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# Leave policy\n\nEmployees get ten paid sick days a year; a doctor's note is needed after three days in a row.\n"
	if err := os.WriteFile(filepath.Join(cfg.SearchLocalDir(), "leave-policy.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a, err := New(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.Server.Handler())
	var kbs struct {
		Default   []string `json:"default"`
		Questions []string `json:"questions"`
	}
	res, err := hs.Client().Get(hs.URL + "/knowledge_base/list_knowledge_bases")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(res.Body).Decode(&kbs)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(kbs.Default) != 0 || len(kbs.Questions) != 0 {
		t.Errorf("list_knowledge_bases: %+v, want no default and no questions", kbs)
	}
	var reply struct {
		Text    string   `json:"text"`
		Failed  []string `json:"failed"`
		Answers []struct {
			From string `json:"from"`
		} `json:"answers"`
	}
	if err := childserver.PostJSON(ctx, hs.Client(), hs.URL+"/chat/mix_chat", map[string]any{"query": "What does the leave policy say about sick days?", "stream": false}, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.Failed) > 0 {
		t.Errorf("mix_chat with no knowledge base: answerers %v failed", reply.Failed)
	}
	for _, an := range reply.Answers {
		if an.From == "kb" {
			t.Error("the knowledge-base answerer ran with no knowledge base")
		}
	}
	fusion := false
	for _, req := range up.Requests() {
		for _, m := range req.Messages {
			for _, w := range zhouyiWords {
				if strings.Contains(m.Content, w) {
					t.Errorf("a prompt names %q:\n%s", w, m.Content)
				}
			}
			fusion = fusion || strings.Contains(m.Content, mix.DefaultPersona)
		}
	}
	if !fusion {
		for _, req := range up.Requests() {
			t.Logf("request: %+v", req.Messages)
		}
		t.Errorf("no fusion prompt with the neutral persona among the %d model requests", len(up.Requests()))
	}
	hs.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A later plain start (demo: true, the default) makes no demo.
	cfg.Demo = true
	a, err = New(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	names, err := a.KB.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 || len(a.Config.KB.DefaultKnowledgeBases) != 0 {
		t.Errorf("after demo: false, a start with demo: true made knowledge bases %v", names)
	}
	if entries, _ := os.ReadDir(filepath.Join(cfg.SearchLocalDir(), demo.SearchFolder)); len(entries) > 0 {
		t.Errorf("after demo: false, a start with demo: true wrote %d search pages", len(entries))
	}
}

// TestRefusedServerWritesNothing: a server that may not listen where it is
// told (every interface, authentication off) is refused before it makes
// the demo or leaves any file in its data directory.
func TestRefusedServerWritesNothing(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Server.Addr = "0.0.0.0:7861"
	cfg.Auth.Enabled = false
	if _, err := New(context.Background(), cfg, Options{}); err == nil {
		t.Fatal("a server on 0.0.0.0 without authentication started")
	}
	if entries, err := os.ReadDir(cfg.Server.DataDir); err == nil && len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the refused server wrote %v into its data directory", names)
	}
}
