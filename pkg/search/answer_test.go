package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/golden"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/prompts"
)

// fakeModel is a hand-written llm.Model: reply makes the text from the
// request; Stream sends it in pieces of a few characters.
type fakeModel struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply func(req llm.Request) (string, error)
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	text, err := m.reply(req)
	if err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Text: text, Model: req.Model, FinishReason: "stop"}, nil
}

func (m *fakeModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	resp, err := m.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	rs := []rune(resp.Text)
	for i := 0; i < len(rs); i += 4 {
		if err := fn(string(rs[i:min(i+4, len(rs))])); err != nil {
			return llm.Response{}, err
		}
	}
	return resp, nil
}

func (m *fakeModel) calls() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

// fakeModels serves one model under any name but "missing".
type fakeModels struct{ m llm.Model }

func (f fakeModels) Get(name string) (llm.Model, string, error) {
	if name == "missing" {
		return nil, "", fmt.Errorf("unknown model %q", name)
	}
	if name == "" {
		name = "fake-default"
	}
	return f.m, name, nil
}

// citeFirst answers with the first context line and a citation.
func citeFirst(req llm.Request) (string, error) {
	if len(req.Context) == 0 {
		return "", errors.New("no context")
	}
	return "答：" + req.Context[0], nil
}

func localCorpus(t *testing.T) string {
	dir := t.TempDir()
	now := time.Now()
	writeFile(t, filepath.Join(dir, "系辞上-十一.txt"), "是故易有太极，是生两仪，两仪生四象，四象生八卦。", now)
	writeFile(t, filepath.Join(dir, "乾.txt"), "天行健，君子以自强不息。", now)
	writeFile(t, filepath.Join(dir, "坤.md"), "# 坤卦\n地势坤，君子以厚德载物。", now)
	return dir
}

func newTestService(t *testing.T, cfg Config, m llm.Model) *Service {
	t.Helper()
	s, err := New(cfg, Options{Models: fakeModels{m}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAnswerFromLocalEngine(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Local.Dir = localCorpus(t)
	m := &fakeModel{reply: citeFirst}
	s := newTestService(t, cfg, m)
	var _ rag.Answerer = s
	var _ rag.Retriever = s

	temp := float32(0.3)
	q := rag.Query{
		Text:        "那它生什么？",
		Standalone:  "太极生什么？",
		History:     []llm.Message{{Role: llm.RoleUser, Content: "什么是太极？"}, {Role: llm.RoleAssistant, Content: "太极是本原。"}},
		Model:       "m1",
		Temperature: &temp,
		MaxTokens:   200,
		TopK:        2,
	}
	var deltas []string
	a, err := s.Answer(context.Background(), q, func(d string) error { deltas = append(deltas, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if a.From != "search" || a.Empty || a.Text != strings.Join(deltas, "") || a.Text != "答：是故易有太极，是生两仪，两仪生四象，四象生八卦[1]。" {
		t.Errorf("answer %+v from deltas %q", a, deltas)
	}
	if len(deltas) < 2 {
		t.Errorf("not streamed: %q", deltas)
	}
	if len(a.Sources) != 1 || a.Sources[0].Title != "系辞上-十一" || !strings.HasPrefix(a.Sources[0].URL, "local:") ||
		a.Sources[0].Score <= 0 || !strings.Contains(a.Sources[0].Snippet, "易有太极") {
		t.Errorf("sources %+v", a.Sources)
	}
	reqs := m.calls()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m1" || r.Temperature == nil || *r.Temperature != 0.3 || r.MaxTokens != 200 || r.Question != "太极生什么？" {
		t.Errorf("request %+v", r)
	}
	if len(r.Messages) != 3 || r.Messages[0].Content != "什么是太极？" || r.Messages[2].Role != llm.RoleUser {
		t.Fatalf("messages %+v", r.Messages)
	}
	prompt := r.Messages[2].Content
	if strings.Contains(prompt, cfg.Local.Dir) || strings.Contains(a.Sources[0].URL, cfg.Local.Dir) {
		t.Errorf("the local folder's absolute path %s reaches the prompt or the sources", cfg.Local.Dir)
	}
	if strings.Contains(prompt, "local:") {
		t.Errorf("a local file link reaches the prompt:\n%s", prompt)
	}
	for _, want := range []string{"[1] 系辞上-十一\n是故易有太极", "<问题>太极生什么？</问题>", "[n]"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Join(r.Context, "|") != "是故易有太极，是生两仪，两仪生四象，四象生八卦[1]。" {
		t.Errorf("context %q", r.Context)
	}

	// Retrieve gives the same evidence without a model call.
	srcs, err := s.Retrieve(context.Background(), rag.Query{Text: "那它生什么？", Standalone: "太极生什么？", TopK: 2})
	if err != nil || len(srcs) != 1 || srcs[0].Title != "系辞上-十一" || len(m.calls()) != 1 {
		t.Errorf("Retrieve: %+v, %v", srcs, err)
	}
	if srcs, err := s.Retrieve(context.Background(), rag.Query{Text: "量子计算"}); err != nil || srcs == nil || len(srcs) != 0 {
		t.Errorf("Retrieve of nothing: %+v, %v", srcs, err)
	}

	// Without fn the model is asked for the whole reply at once.
	if a, err := s.Answer(context.Background(), rag.Query{Text: "自强不息", PromptName: "en"}, nil); err != nil || a.Text == "" {
		t.Errorf("complete: %+v, %v", a, err)
	}
	if last := m.calls()[1]; !strings.Contains(last.Messages[0].Content, "Question: 自强不息") || last.Model != "fake-default" {
		t.Errorf("en prompt / default model: %+v", last)
	}
}

func TestAnswerNothingFound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Local.Dir = localCorpus(t)
	m := &fakeModel{reply: citeFirst}
	s := newTestService(t, cfg, m)
	var got string
	a, err := s.Answer(context.Background(), rag.Query{Text: "量子计算"}, func(d string) error { got += d; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !a.Empty || a.Text != got || !strings.Contains(a.Text, "没有找到") || len(a.Sources) != 0 {
		t.Errorf("answer %+v, streamed %q", a, got)
	}
	if len(m.calls()) != 0 {
		t.Error("the model was called with nothing to answer from")
	}
	a, _ = s.Answer(context.Background(), rag.Query{Text: "quantum computing"}, nil)
	if !strings.Contains(a.Text, "found nothing") {
		t.Errorf("English question answered %q", a.Text)
	}
}

func TestAnswerErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Local.Dir = localCorpus(t)
	cfg.Engines = []EngineConfig{{Name: "bing", Provider: "bing"}}
	boom := errors.New("model down")
	m := &fakeModel{reply: func(llm.Request) (string, error) { return "", boom }}
	s := newTestService(t, cfg, m)
	ctx := context.Background()

	_, err := s.Answer(ctx, rag.Query{Text: "太极", SearchEngine: "google"}, nil)
	var ue *UnknownEngineError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "configured: local, bing") {
		t.Errorf("unknown engine: %v", err)
	}
	_, err = s.Answer(ctx, rag.Query{Text: "太极", SearchEngine: "bing"}, nil)
	var un *UnavailableEngineError
	if !errors.As(err, &un) || !strings.Contains(err.Error(), "api_key is empty") || !strings.Contains(err.Error(), "available: local") {
		t.Errorf("engine without key: %v", err)
	}
	_, err = s.Answer(ctx, rag.Query{Text: "太极", PromptName: "nope"}, nil)
	if err == nil || !strings.Contains(err.Error(), "default") || !strings.Contains(err.Error(), "en") {
		t.Errorf("unknown prompt: %v", err)
	}
	_, err = s.Answer(ctx, rag.Query{Text: "太极", Model: "missing"}, nil)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown model: %v", err)
	}
	if _, err = s.Answer(ctx, rag.Query{Text: "太极"}, nil); !errors.Is(err, boom) {
		t.Errorf("model failure: %v", err)
	}
	stop := errors.New("client gone")
	ok := newTestService(t, cfg, &fakeModel{reply: citeFirst})
	if _, err = ok.Answer(ctx, rag.Query{Text: "太极"}, func(string) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: %v", err)
	}
}

// webSite serves a SearxNG instance whose results point at pages on the
// same server.
func webSite(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"query":%q,"results":[
			{"url":"%[2]s/xici","title":"系辞上","content":"易有太极……"},
			{"url":"%[2]s/gone","title":"Gone","content":"太极图的来历。"},
			{"url":"%[2]s/qian","title":"乾","content":"乾，元亨利贞。"}]}`, r.URL.Query().Get("q"), srv.URL)
	})
	mux.HandleFunc("/xici", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<html><head><title>系辞上</title></head><body><article>
<p>天尊地卑，乾坤定矣。卑高以陈，贵贱位矣。动静有常，刚柔断矣。方以类聚，物以群分，吉凶生矣。在天成象，在地成形，变化见矣。</p>
<p>是故刚柔相摩，八卦相荡。鼓之以雷霆，润之以风雨，日月运行，一寒一暑。乾道成男，坤道成女。乾知大始，坤作成物。</p>
<p>是故易有太极，是生两仪，两仪生四象，四象生八卦，八卦定吉凶，吉凶生大业。</p>
<p>乾以易知，坤以简能。易则易知，简则易从。易知则有亲，易从则有功。有亲则可久，有功则可大。</p>
</article></body></html>`)
	})
	mux.HandleFunc("/qian", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "乾：元，亨，利，贞。\n初九：潜龙勿用。\n九二：见龙在田，利见大人。")
	})
	mux.HandleFunc("/gone", http.NotFound)
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// readingConfig is a search set-up with one engine, "web", the searxng
// instance at url, that reads the result pages (on this machine) and keeps
// one passage of at most chars characters a page.
func readingConfig(url string, chars int) Config {
	cfg := DefaultConfig()
	cfg.Default = "web"
	cfg.Engines = []EngineConfig{{Name: "web", Provider: "searxng", BaseURL: url}}
	cfg.Fetch.Enabled = true
	cfg.Fetch.AllowNetworks = []string{"127.0.0.1/32"}
	cfg.Fetch.Passages = 1
	cfg.Fetch.PassageChars = chars
	return cfg
}

func TestAnswerReadsPagesAndSplits(t *testing.T) {
	srv := webSite(t)
	cfg := readingConfig(srv.URL, 60)
	m := &fakeModel{reply: citeFirst}
	s := newTestService(t, cfg, m)

	ret, err := s.Lookup(context.Background(), LookupRequest{Query: "易有太极", TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(ret.Results) != 3 || len(ret.Docs) != 3 {
		t.Fatalf("retrieval %+v", ret)
	}
	// The page was read and its passage about the question kept.
	if c := ret.Results[0].Content; !strings.Contains(c, "是故易有太极") || strings.Contains(c, "天尊地卑") {
		t.Errorf("page passages %q", c)
	}
	if ret.Docs[0].Text != ret.Results[0].Content || ret.Docs[0].N != 1 {
		t.Errorf("doc 1 %+v", ret.Docs[0])
	}
	// The missing page keeps its snippet and is reported.
	if ret.Docs[1].Text != "太极图的来历。" || len(ret.Warnings) != 1 || !strings.Contains(ret.Warnings[0], "404") {
		t.Errorf("doc 2 %+v, warnings %q", ret.Docs[1], ret.Warnings)
	}

	// split_result: passages across results, best first, numbered anew.
	ret, err = s.Lookup(context.Background(), LookupRequest{Query: "易有太极", TopK: 2, Split: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ret.Docs) != 2 || ret.Docs[0].N != 1 || ret.Docs[1].N != 2 || !strings.Contains(ret.Docs[0].Text, "易有太极") || ret.Docs[0].Title != "系辞上" {
		t.Errorf("split docs %+v", ret.Docs)
	}
	a, ret2, err := s.AnswerWith(context.Background(), rag.Query{Text: "易有太极", TopK: 2}, AnswerOptions{Split: true}, nil)
	// The best passage comes first (it may start with the end of the
	// paragraph before, as the shared splitter packs short paragraphs).
	if err != nil || len(a.Sources) != 2 || len(ret2.Docs) != 2 || !strings.Contains(a.Sources[0].Snippet, "是故易有太极") || !strings.Contains(a.Text, "[1]") {
		t.Errorf("split answer %+v %v", a, err)
	}
}

func TestAnswerCombinedEngineSurvivesAFailure(t *testing.T) {
	srv := webSite(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":"401","message":"Access denied due to invalid subscription key."}}`)
	}))
	defer down.Close()
	cfg := DefaultConfig()
	cfg.Local.Dir = localCorpus(t)
	cfg.Engines = []EngineConfig{
		{Name: "web", Provider: "searxng", BaseURL: srv.URL},
		{Name: "bing", Provider: "bing", BaseURL: down.URL, APIKey: "bad"},
		{Name: "all", Provider: "combined", Engines: []string{"bing", "web", "local"}},
	}
	s := newTestService(t, cfg, &fakeModel{reply: citeFirst})
	ret, err := s.Lookup(context.Background(), LookupRequest{Engine: "all", Query: "易有太极", TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]bool{}
	for _, r := range ret.Results {
		engines[r.Engine] = true
	}
	if !engines["web"] || !engines["local"] || len(ret.Warnings) != 1 || !strings.Contains(ret.Warnings[0], "bing") {
		t.Errorf("engines %v, warnings %q", engines, ret.Warnings)
	}
	a, err := s.Answer(context.Background(), rag.Query{Text: "易有太极", SearchEngine: "all"}, nil)
	if err != nil || a.Empty {
		t.Errorf("answer %+v, %v", a, err)
	}
}

// TestPromptGolden renders every search_engine_chat template with the same
// evidence and compares it with testdata/golden (go test -update rewrites).
func TestCiteSentences(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"是故易有太极，是生两仪。两仪生四象！", 2, "是故易有太极，是生两仪[2]。|两仪生四象[2]！"},
		{"子曰：“书不尽言，言不尽意。”\n天行健", 1, "子曰：“书不尽言，言不尽意[1]。”|天行健[1]"},
		{"The two forms produce the four images. Then eight trigrams?", 3, "The two forms produce the four images [3].|Then eight trigrams [3]?"},
		{"……", 1, ""},
	}
	for _, c := range cases {
		if got := strings.Join(citeSentences(c.in, c.n), "|"); got != c.want {
			t.Errorf("citeSentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPromptGolden(t *testing.T) {
	docs := []Doc{
		{N: 1, Title: "系辞传上-第十一章", URL: "file:///data/zhouyi/%E7%B3%BB%E8%BE%9E.txt", Text: "是故《易》有太极，是生两仪。两仪生四象。四象生八卦。"},
		{N: 2, Title: "太极 - 维基百科", URL: "https://zh.wikipedia.org/wiki/%E5%A4%AA%E6%9E%81", Text: "太极是中国古代哲学用以说明世界本原的范畴。"},
	}
	names := prompts.Names(PromptGroup)
	if len(names) < 2 {
		t.Fatalf("templates %v", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			got, err := Prompt(name, "local", "易有太极是什么意思？", docs)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "golden", PromptGroup+"."+name+".golden"), got)
			for _, must := range []string{"[1]", "[2]", "易有太极是什么意思？", "是故《易》有太极"} {
				if !strings.Contains(got, must) {
					t.Errorf("prompt %s lacks %q", name, must)
				}
			}
		})
	}
}
