package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/search"
)

// searchTestServer serves the API with the offline model and a search
// service built from cfg.
func searchTestServer(t *testing.T, cfg search.Config) *httptest.Server {
	t.Helper()
	store := openSQLite(t)
	models, _ := offlineModels()
	var svc *search.Service
	if cfg.Default != "" {
		var err error
		svc, err = search.New(cfg, search.Options{Models: models})
		if err != nil {
			t.Fatal(err)
		}
	}
	return serveTest(t, New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), Search: svc}))
}

// searchCorpus is a small folder for the local engine.
func searchCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"系辞上-十一.txt": "是故易有太极，是生两仪，两仪生四象，四象生八卦。八卦定吉凶，吉凶生大业。",
		"乾.txt":      "天行健，君子以自强不息。",
		"坤.md":       "# 坤卦\n\n地势坤，君子以厚德载物。",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func searchPost(t *testing.T, srv *httptest.Server, path string, body any) (int, map[string]any) {
	t.Helper()
	return sendJSON(t, http.MethodPost, srv.URL+path, body)
}

func localSearchConfig(t *testing.T) search.Config {
	cfg := search.DefaultConfig()
	cfg.Local.Dir = searchCorpus(t)
	return cfg
}

func TestSearchEngineChat(t *testing.T) {
	srv := searchTestServer(t, localSearchConfig(t))
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{
		"query": "易有太极，是生什么？", "search_engine_name": "local", "top_k": 2, "stream": false,
	})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	answer, _ := out["answer"].(string)
	if !strings.Contains(answer, "是生两仪") || !strings.Contains(answer, "[1]") {
		t.Errorf("answer %q should quote the source with its citation", answer)
	}
	docs, _ := out["docs"].([]any)
	sources, _ := out["sources"].([]any)
	if len(docs) == 0 || len(docs) != len(sources) {
		t.Fatalf("docs %v sources %v", docs, sources)
	}
	if d := docs[0].(string); !strings.HasPrefix(d, "出处 [1] [系辞上-十一](local:") || !strings.Contains(d, ") \n\n是故易有太极") {
		t.Errorf("doc %q not in Chatchat's form with title, url and snippet", d)
	}
	src := sources[0].(map[string]any)
	if src["title"] != "系辞上-十一" || src["n"] != float64(1) || !strings.HasPrefix(src["url"].(string), "local:") || src["snippet"] == "" {
		t.Errorf("source %v", src)
	}
	if out["engine"] != "local" || out["extractive"] != true || out["model"] == "" {
		t.Errorf("reply %v", out)
	}

	// The same question streamed: answer pieces, then the docs.
	stream := postStream(t, srv.URL+"/chat/search_engine_chat", map[string]any{"query": "易有太极，是生什么？", "top_k": 2, "stream": true})
	evs := readEvents[map[string]any](t, stream)
	if len(evs) < 3 {
		t.Fatalf("events %v", evs)
	}
	var streamed string
	for _, ev := range evs[:len(evs)-1] {
		s, ok := ev["answer"].(string)
		if !ok {
			t.Fatalf("event %v is not an answer piece", ev)
		}
		streamed += s
	}
	if streamed != answer {
		t.Errorf("streamed %q, not %q", streamed, answer)
	}
	last := evs[len(evs)-1]
	if d, _ := last["docs"].([]any); len(d) != len(docs) || last["sources"] == nil {
		t.Errorf("last event %v", last)
	}
}

func TestSearchEngineChatNothingFound(t *testing.T) {
	srv := searchTestServer(t, localSearchConfig(t))
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{"query": "量子计算机"})
	if code != http.StatusOK || out["empty"] != true || !strings.Contains(out["answer"].(string), "没有找到") {
		t.Errorf("status %d: %v", code, out)
	}
	if d, _ := out["docs"].([]any); d == nil || len(d) != 0 {
		t.Errorf("docs %v", out["docs"])
	}
}

func TestSearchEngineChatBadRequests(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"engine crashed"}`)
	}))
	defer failing.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	cfg := localSearchConfig(t)
	cfg.Engines = []search.EngineConfig{
		{Name: "bing", Provider: "bing"},
		{Name: "broken", Provider: "searxng", BaseURL: failing.URL},
		{Name: "slow", Provider: "searxng", BaseURL: slow.URL, Timeout: 50 * time.Millisecond},
	}
	srv := searchTestServer(t, cfg)
	cases := []struct {
		name string
		body map[string]any
		code int
		msg  []string
	}{
		{"unknown engine", map[string]any{"query": "q", "search_engine_name": "yahoo"}, 400, []string{`"yahoo"`, "local, bing, broken, slow"}},
		{"engine without key", map[string]any{"query": "q", "search_engine_name": "bing"}, 400, []string{"api_key", "available: local"}},
		{"empty query", map[string]any{"query": " "}, 400, []string{"query"}},
		{"top_k", map[string]any{"query": "q", "top_k": 0}, 400, []string{"top_k"}},
		{"prompt", map[string]any{"query": "q", "prompt_name": "nope"}, 400, []string{"nope", "default"}},
		{"model", map[string]any{"query": "q", "model_name": "gpt-9"}, 400, []string{"gpt-9"}},
		{"temperature", map[string]any{"query": "q", "temperature": 3}, 400, []string{"temperature"}},
		{"history", map[string]any{"query": "q", "history": []map[string]string{{"role": "robot", "content": "x"}}}, 400, []string{"history[0].role"}},
		{"provider failure", map[string]any{"query": "q", "search_engine_name": "broken"}, 502, []string{"broken", "500", "engine crashed"}},
		{"provider failure streamed", map[string]any{"query": "q", "search_engine_name": "broken", "stream": true}, 502, []string{"broken"}},
		{"provider timeout", map[string]any{"query": "q", "search_engine_name": "slow"}, 504, []string{"slow", "timed out"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := searchPost(t, srv, "/chat/search_engine_chat", c.body)
			msg, _ := out["msg"].(string)
			if code != c.code {
				t.Errorf("status %d, want %d: %v", code, c.code, out)
			}
			for _, m := range c.msg {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q lacks %q", msg, m)
				}
			}
		})
	}
}

func TestListSearchEngines(t *testing.T) {
	cfg := localSearchConfig(t)
	cfg.Engines = []search.EngineConfig{
		{Name: "searx", Provider: "searxng", BaseURL: "http://127.0.0.1:1"},
		{Name: "bing", Provider: "bing"},
	}
	srv := searchTestServer(t, cfg)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		req, _ := http.NewRequest(method, srv.URL+"/server/list_search_engines", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Code    int                 `json:"code"`
			Data    []string            `json:"data"`
			Default string              `json:"default"`
			Engines []search.EngineInfo `json:"engines"`
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 200 || out.Code != 200 || strings.Join(out.Data, ",") != "local,searx,bing" || out.Default != "local" {
			t.Errorf("%s: %d %+v", method, resp.StatusCode, out)
		}
		if len(out.Engines) != 3 || !out.Engines[0].Available || out.Engines[2].Available || out.Engines[2].Reason == "" {
			t.Errorf("%s engines %+v", method, out.Engines)
		}
	}
}

func TestDebugSearch(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "Too Many Requests")
	}))
	defer down.Close()
	cfg := localSearchConfig(t)
	cfg.Engines = []search.EngineConfig{
		{Name: "limited", Provider: "searxng", BaseURL: down.URL},
		{Name: "both", Provider: "combined", Engines: []string{"local", "limited"}},
	}
	srv := searchTestServer(t, cfg)
	code, out := searchPost(t, srv, "/debug/search", map[string]any{"query": "自强不息", "search_engine_name": "both"})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	results, _ := out["results"].([]any)
	docs, _ := out["docs"].([]any)
	warnings, _ := out["warnings"].([]any)
	if len(results) != 1 || len(docs) != 1 || len(warnings) != 1 || !strings.Contains(warnings[0].(string), "limited") {
		t.Errorf("reply %v", out)
	}
	if r := results[0].(map[string]any); r["title"] != "乾" || !strings.Contains(r["snippet"].(string), "**自强不息**") {
		t.Errorf("raw result %v", r)
	}
	if _, ok := out["ms"]; !ok || out["engine"] != "both" {
		t.Errorf("reply %v", out)
	}
	code, out = searchPost(t, srv, "/debug/search", map[string]any{"query": "q", "search_engine_name": "limited"})
	if code != http.StatusBadGateway || !strings.Contains(out["msg"].(string), "quota") {
		t.Errorf("single failing engine: %d %v", code, out)
	}
}

func TestSearchNotConfigured(t *testing.T) {
	srv := searchTestServer(t, search.Config{})
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{"query": "q"})
	if code != http.StatusServiceUnavailable || !strings.Contains(out["msg"].(string), "not configured") {
		t.Errorf("%d %v", code, out)
	}
	resp, err := http.Get(srv.URL + "/server/list_search_engines")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("list: %d", resp.StatusCode)
	}
}

// TestSearchEngineChatZhouyi answers over the shared Zhouyi commentaries
// with the local engine and the offline model: search chat with no
// network, with citations.
func TestSearchEngineChatZhouyi(t *testing.T) {
	dir := searchSharedData(t, "zhouyi/yizhuan-simplified")
	cfg := search.DefaultConfig()
	cfg.Local.Dir = dir
	srv := searchTestServer(t, cfg)
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{"query": "系辞 易有太极", "top_k": 3})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	src := out["sources"].([]any)[0].(map[string]any)
	if src["title"] != "系辞传上-第十一章" {
		t.Errorf("first source %v", src)
	}
	t.Logf("answer: %s", out["answer"])
	if a := out["answer"].(string); !strings.Contains(a, "太极") || !strings.Contains(a, "[1]") {
		t.Errorf("answer %q", a)
	}
}

// searchSharedData is ../shared/data/rel, or the test skips.
func searchSharedData(t *testing.T, rel string) string {
	t.Helper()
	return shareddata.Path(t, rel)
}

func TestSearchDocsMarkdown(t *testing.T) {
	ret := search.Retrieval{Engine: "web", Docs: []search.Doc{
		{N: 1, Title: "Taiji [disambiguation]\n(wiki)", URL: "https://en.example.org/wiki/Taiji_(philosophy)", Text: "The Great Ultimate."},
		{N: 2, URL: "https://example.com/a b", Text: "no title"},
	}}
	ev := docsEvent(rag.Answer{}, ret)
	want := []string{
		"出处 [1] [Taiji (disambiguation) (wiki)](https://en.example.org/wiki/Taiji_%28philosophy%29) \n\nThe Great Ultimate.\n\n",
		"出处 [2] [https://example.com/a b](https://example.com/a%20b) \n\nno title\n\n",
	}
	if strings.Join(ev.Docs, "|") != strings.Join(want, "|") {
		t.Errorf("docs\n%q\nwant\n%q", ev.Docs, want)
	}
	if ev.Sources[0].Title != "Taiji [disambiguation]\n(wiki)" || ev.Sources[0].URL != "https://en.example.org/wiki/Taiji_(philosophy)" || ev.Sources[1].N != 2 {
		t.Errorf("structured sources changed: %+v", ev.Sources)
	}
}

// TestSearchEngineChatSearx answers through /chat/search_engine_chat with a
// real searx server (scripts/searx.sh) as the engine and the offline model:
// streamed answer pieces with a citation, then the docs event naming the
// searx result.
func TestSearchEngineChatSearx(t *testing.T) {
	base := os.Getenv("MIXCHAT_TEST_SEARX_URL")
	if base == "" {
		t.Skip(`MIXCHAT_TEST_SEARX_URL not set: run eval "$(scripts/searx.sh start)" to test against a real searx server`)
	}
	cfg := localSearchConfig(t)
	cfg.Engines = []search.EngineConfig{{Name: "searx", Provider: "searxng", BaseURL: base, Language: "zh-CN"}}
	srv := searchTestServer(t, cfg)
	j, _ := json.Marshal(map[string]any{"query": "太极 两仪", "search_engine_name": "searx", "top_k": 3, "stream": true})
	resp, err := http.Post(srv.URL+"/chat/search_engine_chat", "application/json", bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	evs := readEvents[map[string]any](t, resp.Body)
	if len(evs) < 2 {
		t.Fatalf("events %v", evs)
	}
	var answer string
	for _, ev := range evs[:len(evs)-1] {
		answer += ev["answer"].(string)
	}
	if !strings.Contains(answer, "太极") || !strings.Contains(answer, "[1]") {
		t.Errorf("answer %q should quote the searx result with its citation", answer)
	}
	last := evs[len(evs)-1]
	docs, _ := last["docs"].([]any)
	if len(docs) == 0 || !strings.HasPrefix(docs[0].(string), "出处 [1] [系辞传上·第十一章](https://zhouyi.example/xici/shang-11)") || last["engine"] != "searx" {
		t.Errorf("docs event %v", last)
	}
}

// TestSearchEngineChatFollowUp: with a conversation_id the follow-up is
// rewritten once, by the Mixer's condenser over the conversation's
// history, and the search runs with the standalone question; the answer's
// prompt still gets only the history sent.
func TestSearchEngineChatFollowUp(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t)
	models, _ := offlineModels()
	svc, err := search.New(localSearchConfig(t), search.Options{Models: models})
	if err != nil {
		t.Fatal(err)
	}
	var condensed [][]llm.Message
	condenser := mix.CondenseFunc(func(_ context.Context, history []llm.Message, q string) (string, string, error) {
		condensed = append(condensed, history)
		return "坤卦的象辞是什么？", "", nil
	})
	mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.Search: svc}, Condenser: condenser})
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), Search: svc, Mixer: mixer}))
	if _, err := store.AppendTurn(ctx, "s1", memory.Message{Role: llm.RoleUser, Content: "大地对应哪一卦？"},
		memory.Message{Role: llm.RoleAssistant, Content: "对应坤卦。"}); err != nil {
		t.Fatal(err)
	}
	code, out := searchPost(t, srv, "/chat/search_engine_chat", map[string]any{
		"query": "它的象辞呢？", "conversation_id": "s1", "search_engine_name": "local", "top_k": 1, "stream": false,
	})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	if len(condensed) != 1 || len(condensed[0]) != 2 || condensed[0][1].Content != "对应坤卦。" {
		t.Fatalf("condenser saw %+v; want one call over the conversation", condensed)
	}
	sources, _ := out["sources"].([]any)
	if len(sources) != 1 || !strings.Contains(sources[0].(map[string]any)["snippet"].(string), "厚德载物") {
		t.Errorf("sources %v; want the 坤 page, found with the standalone question", sources)
	}
	turns, _ := store.Turns(ctx, "s1", 0)
	if len(turns) != 2 || turns[1].Answer.Metadata.Extra["standalone"] != "坤卦的象辞是什么？" {
		t.Errorf("stored %+v", turns)
	}
}
