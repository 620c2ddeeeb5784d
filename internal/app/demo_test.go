package app

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/childserver"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/text"
)

// TestFirstRunAnswers is the first run as a new user has it: an empty data
// directory, the default configuration, and mix_chat asked 乾卦的卦辞是什么？
// with no knowledge base named answers with 元亨利貞, citing the zhouyi base;
// with demo: false the same server has no knowledge base and the answer
// cannot come from one.
func TestFirstRunAnswers(t *testing.T) {
	tests := []struct {
		demo     bool
		wantKBs  string
		wantText bool
	}{
		{demo: true, wantKBs: `"data":["zhouyi"],"default":["zhouyi"]`, wantText: true},
		{demo: false, wantKBs: `"data":[],"default":[]`},
	}
	for _, tt := range tests {
		ctx := context.Background()
		cfg := config.DefaultConfig()
		cfg.Server.DataDir, cfg.Demo = t.TempDir(), tt.demo
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(a.Server.Handler())
		res, err := hs.Client().Get(hs.URL + "/knowledge_base/list_knowledge_bases")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), tt.wantKBs) {
			t.Errorf("demo %v: list_knowledge_bases %s, want %s", tt.demo, b, tt.wantKBs)
		}
		var reply struct {
			Text    string `json:"text"`
			Answers []struct {
				From    string `json:"from"`
				Sources []struct {
					KB string `json:"knowledge_base"`
				} `json:"sources"`
			} `json:"answers"`
		}
		if err := childserver.PostJSON(ctx, hs.Client(), hs.URL+"/chat/mix_chat", map[string]any{"query": "乾卦的卦辞是什么？", "stream": false}, &reply); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(text.Fold(reply.Text), text.Fold("元亨，利貞"))
		cited := false
		for _, an := range reply.Answers {
			for _, s := range an.Sources {
				cited = cited || (an.From == "kb" && s.KB == "zhouyi")
			}
		}
		if got != tt.wantText || cited != tt.wantText {
			t.Errorf("demo %v: mix_chat answered %q (cites zhouyi: %v); want 元亨利貞 and the citation: %v", tt.demo, reply.Text, cited, tt.wantText)
		}
		hs.Close()
		if err := a.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestDemoLaterStarts: once the first run left its marker, a later start
// keeps the demo knowledge base as the default while it exists, and names
// no default once the user deleted it.
func TestDemoLaterStarts(t *testing.T) {
	ctx := context.Background()
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = t.TempDir()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	opts := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, tt := range []struct {
		name        string
		deleteAfter bool
		want        []string
	}{
		{name: "first run", want: []string{"zhouyi"}},
		{name: "second start", deleteAfter: true, want: []string{"zhouyi"}},
		{name: "after delete", want: nil},
	} {
		a, err := New(ctx, cfg, opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := a.Config.KB.DefaultKnowledgeBases; !slices.Equal(got, tt.want) {
			t.Errorf("%s: default knowledge bases %q, want %q", tt.name, got, tt.want)
		}
		// The demo's persona goes with the demo knowledge base only.
		if demoPersona := strings.Contains(a.Config.Mix.Persona, "易学"); demoPersona != (len(tt.want) > 0) {
			t.Errorf("%s: persona %q with default knowledge bases %q", tt.name, a.Config.Mix.Persona, tt.want)
		}
		if tt.deleteAfter {
			if err := a.KB.Delete(ctx, "zhouyi"); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
