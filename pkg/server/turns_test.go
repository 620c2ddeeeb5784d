package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// newHashKB opens a knowledge-base service on a SQLite catalog in cfg.Dir
// with a hash embedder of dim dimensions, closed when the test ends.
func newHashKB(t *testing.T, cfg kb.Config, dim int, models llm.Models) *kb.Service {
	t.Helper()
	svc, err := kb.New(cfg, sqlite.NewKBCatalog(cfg.Dir), retrieve.NewHashEmbedder(dim), models)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// newKBAndSearch returns a knowledge-base service holding an empty
// knowledge base "notes", and a search service whose local engine finds one
// page about 乾卦.
func newKBAndSearch(t *testing.T, models llm.Models) (*kb.Service, *search.Service) {
	t.Helper()
	kcfg := kb.DefaultConfig()
	kcfg.Dir = t.TempDir()
	kbs := newHashKB(t, kcfg, 128, models)
	if _, err := kbs.Create(context.Background(), "notes", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scfg := search.DefaultConfig()
	scfg.Local.Dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(scfg.Local.Dir, "qian.txt"), []byte("乾卦是六十四卦的第一卦，卦辞为元亨利贞。"), 0o644); err != nil {
		t.Fatal(err)
	}
	searcher, err := search.New(scfg, search.Options{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	return kbs, searcher
}

// newSingleAnswererServer serves the three single-answerer endpoints with
// the offline model, a knowledge base "notes" and the local search engine,
// measured by an Observer of its own.
func newSingleAnswererServer(t *testing.T, edit func(*Options)) (*observedServer, *sqlite.Conversations) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.OpenConversations(ctx, filepath.Join(t.TempDir(), "mixchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o := obs.New(obs.Options{Tracing: tp, Log: slog.New(slog.DiscardHandler)})
	models := llm.NewRegistry("offline")
	models.Add("offline", llm.NewOffline(llm.OfflineOptions{}))
	kbs, searcher := newKBAndSearch(t, models)
	answerer := chat.New(models, chat.Options{})
	mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.LLM: answerer, rag.KB: kbs}})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Store: store, Models: models, Chat: answerer, KB: kbs, Search: searcher, Mixer: mixer, Obs: o}
	if edit != nil {
		edit(&opts)
	}
	return &observedServer{Server: New(opts), store: store, obs: o, spans: exp}, store
}

// Every chat endpoint runs its answerer through the turn, so each one is
// measured: after one call each of /chat/chat, /chat/knowledge_base_chat
// and /chat/search_engine_chat, /metrics has answerer series for llm, kb
// and search.
func TestSingleAnswererEndpointsAreMeasured(t *testing.T) {
	s, _ := newSingleAnswererServer(t, nil)
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/chat/chat", map[string]any{"query": "乾卦是什么？"}},
		{"/chat/knowledge_base_chat", map[string]any{"query": "乾卦是什么？", "knowledge_base_name": "notes"}},
		{"/chat/search_engine_chat", map[string]any{"query": "乾卦是什么？", "stream": true}},
	} {
		if rec := s.do(http.MethodPost, c.path, c.body, nil); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", c.path, rec.Code, rec.Body)
		}
	}
	body := s.do(http.MethodGet, "/metrics", nil, nil).Body.String()
	for _, a := range []string{"llm", "kb", "search"} {
		want := `mixchat_answerer_duration_seconds_count{answerer="` + a + `",outcome="ok"} 1`
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	traced := map[string]bool{}
	for _, sp := range s.spans.GetSpans() {
		traced[sp.Name] = true
	}
	for _, a := range []string{"llm", "kb", "search"} {
		if !traced["answerer "+a] {
			t.Errorf("no span answerer %s among %v", a, traced)
		}
	}
}

// A question longer than server.max_query_chars is refused with 413 naming
// the limit, on every chat endpoint and /debug/condense, before any work.
func TestQueryTooLong(t *testing.T) {
	s, store := newSingleAnswererServer(t, func(o *Options) { o.MaxQueryChars = 10 })
	long := strings.Repeat("乾", 11)
	for _, path := range []string{"/chat/chat", "/chat/knowledge_base_chat", "/chat/search_engine_chat", "/chat/mix_chat", "/debug/condense"} {
		rec := s.do(http.MethodPost, path, map[string]any{"query": long, "knowledge_base_name": "notes", "conversation_id": "long"}, nil)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "limit of 10 (server.max_query_chars)") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := s.do(http.MethodPost, "/v1/chat/completions", map[string]any{"model": "mixchat-mix", "messages": []map[string]any{{"role": "user", "content": long}}}, nil)
	if rec.Code == http.StatusOK {
		t.Errorf("/v1/chat/completions took a long question: %s", rec.Body)
	}
	if _, err := store.Conversation(context.Background(), "long"); err == nil {
		t.Error("a refused question created its conversation")
	}
	if rec := s.do(http.MethodPost, "/chat/chat", map[string]any{"query": strings.Repeat("乾", 10)}, nil); rec.Code != http.StatusOK {
		t.Errorf("a question at the limit → %d %s", rec.Code, rec.Body)
	}
}

// A conversation created by a chat turn is named after its first question;
// a later turn and a rename keep the user's choice.
func TestConversationTitleFromFirstQuestion(t *testing.T) {
	s, store := newSingleAnswererServer(t, nil)
	ctx := context.Background()
	ask := func(q string) {
		t.Helper()
		if rec := s.do(http.MethodPost, "/chat/chat", map[string]any{"query": q, "conversation_id": "titled"}, nil); rec.Code != http.StatusOK {
			t.Fatalf("chat: %d %s", rec.Code, rec.Body)
		}
	}
	ask("  乾卦是什么？\n请详细说明。")
	conv, err := store.Conversation(ctx, "titled")
	if err != nil || conv.Name != "乾卦是什么？" {
		t.Fatalf("name = %q, %v; want the first question's first line", conv.Name, err)
	}
	if err := store.RenameConversation(ctx, "titled", "我的乾卦"); err != nil {
		t.Fatal(err)
	}
	ask("坤卦呢？")
	if conv, _ := store.Conversation(ctx, "titled"); conv.Name != "我的乾卦" {
		t.Errorf("name after rename and a second turn = %q", conv.Name)
	}
}

// mixchat-kb without a knowledge base named (and none configured by
// default) is the client's mistake, and the message says how to name one.
func TestOpenAIKBModelNeedsAKnowledgeBase(t *testing.T) {
	s, _ := newSingleAnswererServer(t, nil)
	msgs := []map[string]any{{"role": "user", "content": "乾卦是什么？"}}
	rec := s.do(http.MethodPost, "/v1/chat/completions", map[string]any{"model": "mixchat-kb", "messages": msgs}, nil)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "knowledge_base_name") || !strings.Contains(rec.Body.String(), `"type":"invalid_request_error"`) {
		t.Errorf("no knowledge base → %d %s", rec.Code, rec.Body)
	}
	rec = s.do(http.MethodPost, "/v1/chat/completions", map[string]any{"model": "mixchat-kb", "messages": msgs,
		"metadata": map[string]string{"knowledge_base_name": "notes"}}, nil)
	if rec.Code != http.StatusOK {
		t.Errorf("knowledge base named in metadata → %d %s", rec.Code, rec.Body)
	}
}

// A shutdown cutting a stream ends it with an error event saying so, in the
// endpoint's shape, on every single-answerer endpoint, and stores the reply
// as interrupted.
func TestSingleAnswererStreamCutOnShutdown(t *testing.T) {
	for _, tc := range []struct {
		path  string
		body  string
		field string // where the shutdown notice is
	}{
		{"/chat/knowledge_base_chat", `{"query":"乾卦是什么","knowledge_base_name":"notes","conversation_id":"x1","stream":true,"model_name":"test"}`, "msg"},
		{"/chat/search_engine_chat", `{"query":"乾卦","conversation_id":"x1","stream":true,"model_name":"test"}`, "error"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			up := llmtest.NewServer(t)
			up.Script(llmtest.Reply{Text: strings.Repeat("变。", 200), ChunkDelay: 20 * time.Millisecond})
			ts := newTestServer(t, up)
			ctx := context.Background()
			ts.kb, ts.search = newKBAndSearch(t, ts.models)

			resp, err := http.Post(ts.http.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
				t.Fatalf("first line %q, %v", line, err)
			}
			ts.CutStreams()
			rest, _ := io.ReadAll(br)
			lines := strings.Split(strings.TrimSpace(string(rest)), "\n\n")
			var last map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[len(lines)-1], "data: ")), &last); err != nil {
				t.Fatal(err)
			}
			if s, _ := last[tc.field].(string); !strings.Contains(s, "shutting down") || last["code"] != float64(http.StatusServiceUnavailable) {
				t.Errorf("last event = %v, want a shutdown notice with code 503", last)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := ts.Wait(wctx); err != nil {
				t.Fatal(err)
			}
			turns, err := ts.store.Turns(ctx, "x1", 0)
			if err != nil || len(turns) != 1 || !turns[0].Answer.Metadata.Interrupted || turns[0].Answer.Content == "" {
				t.Fatalf("turns = %+v, %v; want one interrupted turn", turns, err)
			}
		})
	}
}
