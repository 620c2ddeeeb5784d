package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/internal/leaktest"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// Replies of the test upstream, chosen by what the prompt asks.
const (
	replyLLM    = "大模型：乾为天，六爻皆阳。"
	replyKB     = "知识库：乾，元亨利贞。"
	replySearch = "网络：乾卦代表天。"
	replyFused  = "乾卦象征天（据知识库），其卦辞为元亨利贞。"
)

// mixUpstream is the test LLM server plus what the fake answerers were asked.
type mixUpstream struct {
	*llmtest.Server
	mu    sync.Mutex
	fused string        // the fusion reply; replyFused when empty
	delay time.Duration // ChunkDelay of the fusion reply
	seen  map[string][]rag.Query
}

func newMixUpstream(t testing.TB, opts ...llmtest.Option) *mixUpstream {
	u := &mixUpstream{seen: map[string][]rag.Query{}}
	handler := func(req openai.ChatCompletionRequest) llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		switch {
		case strings.HasPrefix(prompt, "[kb]"):
			return llmtest.Reply{Text: replyKB}
		case strings.HasPrefix(prompt, "[search]"):
			return llmtest.Reply{Text: replySearch}
		case strings.Contains(prompt, "【写作要求】"):
			u.mu.Lock()
			defer u.mu.Unlock()
			text := u.fused
			if text == "" {
				text = replyFused
			}
			return llmtest.Reply{Text: text, ChunkDelay: u.delay}
		}
		return llmtest.Reply{Text: replyLLM}
	}
	u.Server = llmtest.NewServer(t, append([]llmtest.Option{llmtest.WithHandler(handler)}, opts...)...)
	return u
}

func (u *mixUpstream) queries(from string) []rag.Query {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]rag.Query(nil), u.seen[from]...)
}

// answerer is a stand-in for the knowledge-base or search answerer: it
// records the query and makes one real LLM call, "[from] question", so
// that cancellation reaches the test upstream.
func (u *mixUpstream) answerer(models llm.Models, from string, srcs ...rag.Source) rag.Answerer {
	return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		u.mu.Lock()
		u.seen[from] = append(u.seen[from], q)
		u.mu.Unlock()
		m, name, err := models.Get(q.Model)
		if err != nil {
			return rag.Answer{}, err
		}
		req := llm.Request{Model: name, Messages: []llm.Message{{Role: llm.RoleUser, Content: "[" + from + "] " + q.Retrieval()}}}
		resp, err := llm.Generate(ctx, m, req, fn)
		return rag.Answer{From: from, Text: resp.Text, Sources: srcs, Response: resp}, err
	})
}

var (
	mixKBSource  = rag.Source{Title: "周易·乾", Snippet: "乾，元亨利贞。", KB: "zhouyi", File: "zhouyi.txt", Score: 0.8}
	mixWebSource = rag.Source{Title: "乾卦", URL: "https://example.org/qian", Snippet: "乾卦代表天。"}
)

// mixSetup adjusts a test mix server before it starts.
type mixSetup struct {
	cfg       mix.Config
	answerers map[string]rag.Answerer // replace the default ones
	condenser mix.Condenser
	// memory wires a real memory.Manager (extractive, no model) as the
	// Mixer's condenser and recaller and as the server's memory, as
	// mixchat serve does.
	memory bool
}

// newMixServer is a server over a real SQLite store whose models all go to
// up, with the real LLM-chat answerer and stand-ins for kb and search.
func newMixServer(t testing.TB, up *mixUpstream, edit func(*mixSetup, llm.Models)) *testServer {
	t.Helper()
	store, err := sqlite.OpenConversations(context.Background(), filepath.Join(t.TempDir(), "mixchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	models := llm.NewRegistry("test")
	// No keep-alive: a connection left idle would read as a leaked
	// goroutine.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 10 * time.Second, MaxRetries: -1, HTTPClient: hc}))
	setup := mixSetup{cfg: mix.DefaultConfig(), answerers: map[string]rag.Answerer{
		rag.LLM:    chat.New(models, chat.Options{}),
		rag.KB:     up.answerer(models, rag.KB, mixKBSource),
		rag.Search: up.answerer(models, rag.Search, mixWebSource),
	}}
	if edit != nil {
		edit(&setup, models)
	}
	deps := mix.Deps{Models: models, Answerers: setup.answerers, Condenser: setup.condenser}
	opts := Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), MaxBodyBytes: 64 << 10}
	if setup.memory {
		mgr, err := memory.NewManager(store, memory.DefaultConfig(), offlineMemory())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mgr.Close() })
		deps.Condenser, opts.Memory = mgr, mgr
	}
	mixer, err := mix.New(setup.cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	opts.Mixer = mixer
	s := New(opts)
	ts := &testServer{Server: s, store: store, http: httptest.NewServer(s.Handler())}
	t.Cleanup(ts.http.Close)
	return ts
}

// mixHTTP is an HTTP client whose connections close after each
// request, so goroutine counts come back to where they were.
var mixHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// mixStream posts a streamed mix_chat and returns its events.
func (ts *testServer) mixStream(t *testing.T, body map[string]any) (int, []mixEvent) {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	resp, err := mixHTTP.Post(ts.http.URL+"/chat/mix_chat", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, readEvents[mixEvent](t, resp.Body)
}

func mixEventsOf(evs []mixEvent, typ string) []mixEvent {
	var out []mixEvent
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func mixDeltaText(evs []mixEvent) string {
	var b strings.Builder
	for _, e := range mixEventsOf(evs, "delta") {
		b.WriteString(e.Text)
	}
	return b.String()
}

func TestMixChatStream(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	code, evs := ts.mixStream(t, map[string]any{"query": "乾卦是什么意思？", "conversation_id": "m1", "knowledge_base_name": "zhouyi", "top_k": 3, "score_threshold": 1.0})
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if got := mixDeltaText(evs); got != replyFused {
		t.Errorf("streamed reply %q, want %q", got, replyFused)
	}
	for _, a := range []string{"llm", "kb", "search"} {
		var started, done bool
		for _, e := range mixEventsOf(evs, "status") {
			started = started || (e.Answerer == a && e.State == "started")
			done = done || (e.Answerer == a && e.State == "done" && e.Ms != nil)
		}
		if !started || !done {
			t.Errorf("%s: started %v done %v in %+v", a, started, done, mixEventsOf(evs, "status"))
		}
	}
	answers := map[string]string{}
	for _, e := range mixEventsOf(evs, "answer") {
		answers[e.Answerer] = e.Text
	}
	if answers["llm"] != replyLLM || answers["kb"] != replyKB || answers["search"] != replySearch {
		t.Errorf("answer events = %v", answers)
	}
	docs := mixEventsOf(evs, "docs")
	if len(docs) != 1 || len(docs[0].Docs) != 2 || docs[0].Docs[0].From != "kb" || docs[0].Docs[1].URL != mixWebSource.URL {
		t.Errorf("docs events = %+v", docs)
	}
	last := evs[len(evs)-1]
	if last.Type != "done" || last.MessageID == "" || last.TurnID != 1 || last.Usage == nil || last.Usage.TotalTokens == 0 || last.Fused == nil || !*last.Fused {
		t.Fatalf("last event = %+v", last)
	}
	// Storing the turn is timed in the done event, and not in the record
	// stored with the turn (which is written before it is known).
	if last.Timings["store_ms"] <= 0 {
		t.Errorf("done event timings %v lack store_ms", last.Timings)
	}
	if turns, err := ts.store.Turns(context.Background(), "m1", 0); err != nil || len(turns) != 1 {
		t.Errorf("turns %+v, %v", turns, err)
	} else if tm, _ := turns[0].Answer.Metadata.Extra["timings"].(map[string]any); tm == nil || tm["store_ms"] != nil {
		t.Errorf("stored timings %v: want them without store_ms", turns[0].Answer.Metadata.Extra["timings"])
	}
	// The kb answerer got the request's retrieval settings.
	q := up.queries("kb")[0]
	if len(q.KnowledgeBases) != 1 || q.KnowledgeBases[0] != "zhouyi" || q.TopK != 3 || q.ScoreThreshold != 0.5 {
		t.Errorf("kb query = %+v", q)
	}

	// One turn, stored with everything the Mixer did.
	turns, err := ts.store.Turns(context.Background(), "m1", 0)
	if err != nil || len(turns) != 1 {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	a := turns[0].Answer
	if a.ID != last.MessageID || a.Content != replyFused || a.Metadata.Interrupted || a.Metadata.Usage.TotalTokens != last.Usage.TotalTokens {
		t.Errorf("stored answer = %+v", a)
	}
	if turns[0].Question.Content != "乾卦是什么意思？" {
		t.Errorf("stored question = %+v", turns[0].Question)
	}
	extra, _ := json.Marshal(a.Metadata.Extra)
	for _, want := range []string{`"chat_type":"mix_chat"`, `"fusion":"answers"`, replyLLM, replyKB, replySearch, `"answers_ms"`, `"first_token_ms"`, `"docs"`} {
		if !strings.Contains(string(extra), want) {
			t.Errorf("stored metadata lacks %s: %s", want, extra)
		}
	}
}

func TestMixChatNonStreamWithFailure(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) {
		s.answerers[rag.Search] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			return rag.Answer{}, errors.New("searx: connection refused")
		})
	})
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾卦是什么意思？", "conversation_id": "n1"})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	if out["text"] != replyFused || out["fused"] != true || out["turn_id"] != float64(1) {
		t.Errorf("reply = %v", out)
	}
	if failed, _ := out["failed"].([]any); len(failed) != 1 || failed[0] != "search" {
		t.Errorf("failed = %v", out["failed"])
	}
	answers, _ := out["answers"].([]any)
	if len(answers) != 3 || !strings.Contains(answers[2].(map[string]any)["error"].(string), "connection refused") {
		t.Errorf("answers = %v", answers)
	}
	// The fusion prompt carried the two answers that came back.
	reqs := up.Requests()
	fusion := reqs[len(reqs)-1].Messages[0].Content
	if !strings.Contains(fusion, replyLLM) || !strings.Contains(fusion, replyKB) || strings.Contains(fusion, "来源：网络搜索") {
		t.Errorf("fusion prompt:\n%s", fusion)
	}
}

func TestMixChatAllFail(t *testing.T) {
	up := newMixUpstream(t)
	up.Script(mixFailures(3)...)
	ts := newMixServer(t, up, nil)
	code, evs := ts.mixStream(t, map[string]any{"query": "乾卦是什么意思？", "conversation_id": "a1"})
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	last := evs[len(evs)-1]
	if last.Type != "error" || last.Code != http.StatusBadGateway {
		t.Fatalf("last event = %+v", last)
	}
	for _, want := range []string{"every answerer failed", "llm: ", "kb: ", "search: ", "status 500"} {
		if !strings.Contains(last.Error, want) {
			t.Errorf("error %q lacks %q", last.Error, want)
		}
	}
	if len(mixEventsOf(evs, "delta")) != 0 {
		t.Error("deltas sent")
	}
	if _, err := ts.store.Turns(context.Background(), "a1", 0); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("a failed reply stored a turn (err %v)", err)
	}
	up.Script(mixFailures(3)...)
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾卦是什么意思？"})
	if code != http.StatusBadGateway || !strings.Contains(out["msg"].(string), "every answerer failed") {
		t.Errorf("non-stream: %d %v", code, out)
	}
}

func TestMixChatOneTimesOut(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, models llm.Models) {
		s.cfg.Timeouts.Answerers[rag.KB] = 100 * time.Millisecond
		slow := up.answerer(models, rag.KB)
		s.answerers[rag.KB] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			<-ctx.Done() // retrieval that never finishes
			return slow.Answer(ctx, q, fn)
		})
	})
	code, evs := ts.mixStream(t, map[string]any{"query": "乾卦是什么意思？", "conversation_id": "t1"})
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	var timedOut bool
	for _, e := range mixEventsOf(evs, "status") {
		if e.Answerer == "kb" && e.State == "failed" && e.TimedOut && strings.Contains(e.Error, "kb timed out after 100ms") {
			timedOut = true
		}
	}
	if !timedOut || mixDeltaText(evs) != replyFused {
		t.Errorf("kb timeout not reported or fusion did not go on: %+v", evs)
	}
	turns, _ := ts.store.Turns(context.Background(), "t1", 0)
	if len(turns) != 1 || turns[0].Answer.Metadata.Extra["failed"] == nil {
		t.Errorf("turns = %+v", turns)
	}
}

// TestMixChatClientDisconnect leaves while the fused answer streams: the
// turn is stored as interrupted with what was sent, the upstream call is
// cancelled, and every goroutine of the request ends.
func TestMixChatClientDisconnect(t *testing.T) {
	up := newMixUpstream(t)
	up.fused = strings.Repeat("乾卦六爻皆阳，象征天。", 40)
	up.delay = 20 * time.Millisecond
	ts := newMixServer(t, up, nil)
	before := runtime.NumGoroutine()

	leaveMidStream(t, mixHTTP, ts.http.URL+"/chat/mix_chat", `{"query":"乾卦是什么意思？","conversation_id":"d1","stream":true}`,
		3, func(line string) bool { return strings.Contains(line, `"type":"delta"`) })
	a := interruptedAnswer(t, ts.store, "d1", up.fused)
	if a.Metadata.Extra["answers"] == nil {
		t.Errorf("the interrupted turn lost its intermediate answers: %v", a.Metadata.Extra)
	}
	if !up.WaitIdle(5 * time.Second) {
		t.Fatalf("mixUpstream still answering after the client left (in flight: %d)", up.InFlight())
	}
	if up.Cancelled() < 1 {
		t.Errorf("the fusion call was not cancelled mixUpstream (cancelled: %d)", up.Cancelled())
	}
	leaktest.Wait(t, before)
}

// TestMixChatFollowUp checks that the second question of a conversation is
// rewritten from the stored history and that the rewrite is what the
// knowledge base and search retrieve with.
func TestMixChatFollowUp(t *testing.T) {
	up := newMixUpstream(t)
	var calls int
	var mu sync.Mutex
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) {
		s.condenser = mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			var past strings.Builder
			for _, m := range h {
				past.WriteString(m.Content)
			}
			if strings.Contains(past.String(), "乾卦") && strings.HasPrefix(q, "它") {
				return "乾卦的卦辞是什么？", "用户在问乾卦。", nil
			}
			return q, "", nil
		})
	})
	if code, _ := ts.mixStream(t, map[string]any{"query": "乾卦是什么？", "conversation_id": "f1"}); code != http.StatusOK {
		t.Fatal(code)
	}
	code, evs := ts.mixStream(t, map[string]any{"query": "它的卦辞呢？", "conversation_id": "f1"})
	if code != http.StatusOK {
		t.Fatal(code)
	}
	if calls != 1 {
		t.Errorf("condensed %d times, want once (the first question has no history)", calls)
	}
	for _, from := range []string{"kb", "search"} {
		qs := up.queries(from)
		if len(qs) != 2 || qs[1].Retrieval() != "乾卦的卦辞是什么？" {
			t.Errorf("%s retrieved with %+v, want the standalone question", from, qs)
		}
	}
	// The LLM-chat answerer saw the history, not the rewrite.
	var sawHistory bool
	for _, r := range up.Requests() {
		c := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(c, "Human: 乾卦是什么？") && strings.Contains(c, "Human: 它的卦辞呢？") {
			sawHistory = true
		}
	}
	if !sawHistory {
		t.Error("no LLM-chat request carried the history and the question as asked")
	}
	st := mixEventsOf(evs, "standalone")
	if len(st) != 1 || st[0].Text != "乾卦的卦辞是什么？" || evs[len(evs)-1].Standalone != "乾卦的卦辞是什么？" {
		t.Errorf("standalone events %+v, done %+v", st, evs[len(evs)-1])
	}
	turns, _ := ts.store.Turns(context.Background(), "f1", 0)
	if len(turns) != 2 || turns[1].Answer.Metadata.Extra["standalone"] != "乾卦的卦辞是什么？" {
		t.Errorf("stored turns = %+v", turns)
	}

	// /debug/condense runs the same rewrite over the same history.
	code, out := ts.post(t, "/debug/condense", map[string]any{"query": "它的卦辞呢？", "conversation_id": "f1", "history_len": 1})
	if code != http.StatusOK || out["standalone"] != "乾卦的卦辞是什么？" || out["rewritten"] != true || out["context"] != "用户在问乾卦。" {
		t.Errorf("/debug/condense = %d %v", code, out)
	}
	code, out = ts.post(t, "/debug/condense", map[string]any{"query": "它的卦辞呢？", "history": []map[string]string{{"role": "user", "content": "坤卦"}, {"role": "assistant", "content": "坤为地"}}})
	if code != http.StatusOK || out["rewritten"] != false || out["standalone"] != "它的卦辞呢？" {
		t.Errorf("/debug/condense with client history = %d %v", code, out)
	}
}

// TestMixChatFollowUpWithMemory runs a follow-up through the wiring of
// mixchat serve: the turn recalls the conversation through the memory
// manager, which also rewrites the follow-up (extractively here), and the rewrite is what
// the knowledge base and search retrieve with.
func TestMixChatFollowUpWithMemory(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) { s.memory = true })
	if code, _ := ts.mixStream(t, map[string]any{"query": "乾卦是什么？", "conversation_id": "mem1"}); code != http.StatusOK {
		t.Fatal(code)
	}
	if st := up.queries("kb")[0]; st.Standalone != "" {
		t.Errorf("the first question, with no history, was rewritten to %q", st.Standalone)
	}
	code, evs := ts.mixStream(t, map[string]any{"query": "它的卦辞呢？", "conversation_id": "mem1"})
	if code != http.StatusOK {
		t.Fatal(code)
	}
	st := mixEventsOf(evs, "standalone")
	if len(st) != 1 {
		t.Fatalf("standalone events = %+v", st)
	}
	standalone := st[0].Text
	if standalone == "它的卦辞呢？" || !strings.Contains(standalone, "乾卦") {
		t.Errorf("standalone question %q does not carry the subject of the history", standalone)
	}
	for _, from := range []string{"kb", "search"} {
		qs := up.queries(from)
		if len(qs) != 2 || qs[1].Retrieval() != standalone || qs[1].Text != "它的卦辞呢？" {
			t.Errorf("%s got %+v, want the question as asked and %q to retrieve with", from, qs, standalone)
		}
	}
	var sawHistory bool
	for _, r := range up.Requests() {
		c := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(c, "乾卦是什么？") && strings.Contains(c, replyFused) && strings.Contains(c, "它的卦辞呢？") {
			sawHistory = true
		}
	}
	if !sawHistory {
		t.Error("no LLM-chat request carried the recalled turn and the question as asked")
	}
	if last := evs[len(evs)-1]; last.Type != "done" || last.Standalone != standalone {
		t.Errorf("done event = %+v", last)
	}
	turns, err := ts.store.Turns(context.Background(), "mem1", 0)
	if err != nil || len(turns) != 2 || turns[1].Answer.Metadata.Extra["standalone"] != standalone {
		t.Fatalf("stored turns = %+v, %v", turns, err)
	}
	// /debug/condense gives the same rewrite over the history the Mixer
	// saw (the first turn).
	code, out := ts.post(t, "/debug/condense", map[string]any{"query": "它的卦辞呢？",
		"history": []map[string]string{{"role": "user", "content": "乾卦是什么？"}, {"role": "assistant", "content": replyFused}}})
	if code != http.StatusOK || out["standalone"] != standalone || out["rewritten"] != true {
		t.Errorf("/debug/condense = %d %v, want %q", code, out, standalone)
	}
}

// mixRetriever is a stand-in answerer that can also retrieve.
type mixRetriever struct {
	rag.Answerer
	srcs []rag.Source
}

func (r mixRetriever) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	return r.srcs, nil
}

func TestMixChatContextMode(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, models llm.Models) {
		s.answerers[rag.KB] = mixRetriever{Answerer: s.answerers[rag.KB], srcs: []rag.Source{mixKBSource}}
		s.answerers[rag.Search] = mixRetriever{Answerer: s.answerers[rag.Search], srcs: []rag.Source{mixWebSource}}
	})
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾卦是什么意思？", "fusion": "context", "conversation_id": "x1"})
	if code != http.StatusOK || out["text"] != replyFused || out["fusion"] != "context" {
		t.Fatalf("%d %v", code, out)
	}
	reqs := up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d mixUpstream calls, want one", len(reqs))
	}
	prompt := reqs[0].Messages[0].Content
	if !strings.Contains(prompt, "【知识库资料】") || !strings.Contains(prompt, mixKBSource.Snippet) || !strings.Contains(prompt, mixWebSource.URL) {
		t.Errorf("context prompt:\n%s", prompt)
	}
	if docs, _ := out["docs"].([]any); len(docs) != 2 {
		t.Errorf("docs = %v", out["docs"])
	}
}

func TestMixChatAnswerers(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) {
		s.cfg.Answerers = []string{rag.LLM, rag.KB}
	})
	// One answerer: its reply streams as is, no fusion.
	code, evs := ts.mixStream(t, map[string]any{"query": "乾卦是什么意思？", "answerers": []string{"kb"}})
	if code != http.StatusOK || mixDeltaText(evs) != replyKB || up.Calls() != 1 {
		t.Errorf("kb alone: %d %q, %d mixUpstream calls", code, mixDeltaText(evs), up.Calls())
	}
	// search is not enabled on this deployment.
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾卦", "answerers": []string{"search"}})
	if code != http.StatusBadRequest || !strings.Contains(out["msg"].(string), `"search" is not enabled`) {
		t.Errorf("disabled answerer: %d %v", code, out)
	}
}

func TestMixChatBadRequests(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, nil)
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"empty query", map[string]any{"query": " "}, "query must not be empty"},
		{"unknown answerer", map[string]any{"query": "乾", "answerers": []string{"bing"}}, `unknown answerer "bing"`},
		{"fusion", map[string]any{"query": "乾", "fusion": "vote"}, `fusion: "vote" unknown`},
		{"model", map[string]any{"query": "乾", "model_name": "gpt-9"}, "gpt-9"},
		{"top_k", map[string]any{"query": "乾", "top_k": 0}, "top_k must be between 1 and 100"},
		{"score", map[string]any{"query": "乾", "score_threshold": 3}, "score_threshold must be between 0 and 2"},
		{"kb name", map[string]any{"query": "乾", "knowledge_base_name": "../etc"}, "knowledge_base_name"},
		{"prompt", map[string]any{"query": "乾", "prompt_name": "nope"}, "prompt_name"},
		{"history", map[string]any{"query": "乾", "history": []map[string]string{{"role": "robot", "content": "x"}}}, "history[0].role"},
		{"types", `{"query": 1}`, `field "query" must be a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := ts.post(t, "/chat/mix_chat", tc.body)
			if code != http.StatusBadRequest || !strings.Contains(out["msg"].(string), tc.want) {
				t.Errorf("%d %v, want 400 with %q", code, out, tc.want)
			}
		})
	}
	if up.Calls() != 0 {
		t.Errorf("bad requests reached the mixUpstream %d times", up.Calls())
	}
}

func TestMixChatNotConfigured(t *testing.T) {
	ts := newTestServer(t, nil)
	code, out := ts.post(t, "/chat/mix_chat", map[string]any{"query": "乾"})
	if code != http.StatusServiceUnavailable || !strings.Contains(out["msg"].(string), "not configured") {
		t.Errorf("%d %v", code, out)
	}
}

// mixFailures returns n replies that fail with status 500.
func mixFailures(n int) []llmtest.Reply {
	out := make([]llmtest.Reply, n)
	for i := range out {
		out[i] = llmtest.Reply{Status: http.StatusInternalServerError}
	}
	return out
}

// BenchmarkMixChat runs streamed /chat/mix_chat requests from 100
// conversations at once against an upstream that answers instantly (three
// answerers and the fusion call: four upstream calls per request) and
// reports requests/s and latency percentiles.
//
//	go test ./pkg/server -run '^$' -bench BenchmarkMixChat -benchtime 2000x
func BenchmarkMixChat(b *testing.B) {
	const conversations = 100
	up := newMixUpstream(b)
	ts := newMixServer(b, up, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conversations}}
	var mu sync.Mutex
	var lat []time.Duration
	next := 0
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conversations; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= b.N {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				t0 := time.Now()
				body := `{"query":"乾卦是什么意思？","stream":true,"conversation_id":"bench-` + strconv.Itoa(w) + `"}`
				resp, err := client.Post(ts.http.URL+"/chat/mix_chat", "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(data), `"type":"done"`) {
					b.Errorf("no done event: %s", data)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// The search service offers its evidence to the "context" fusion mode.
var _ rag.Retriever = (*search.Service)(nil)

// TestCondenseSearch checks the follow-up condensing search_docs takes its
// question from: none without history, the rewrite against the client's
// history or the conversation's, and the question as sent when the rewrite
// fails.
func TestCondenseSearch(t *testing.T) {
	up := newMixUpstream(t)
	ts := newMixServer(t, up, func(s *mixSetup, _ llm.Models) { s.memory = true })
	ctx := context.Background()
	if cq, err := ts.condenseSearch(ctx, "乾卦是什么？", "", nil, memory.Choice{}); cq != nil || err != nil {
		t.Errorf("without history: %+v, %v; want nil (search as sent)", cq, err)
	}
	if code, _ := ts.mixStream(t, map[string]any{"query": "乾卦是什么？", "conversation_id": "s1"}); code != http.StatusOK {
		t.Fatal(code)
	}
	byConv, err := ts.condenseSearch(ctx, "它的卦辞呢？", "s1", nil, memory.Choice{})
	if err != nil || byConv == nil || !byConv.Rewritten || !strings.Contains(byConv.Standalone, "乾卦") || byConv.Query != "它的卦辞呢？" {
		t.Fatalf("with conversation_id: %+v, %v", byConv, err)
	}
	byHistory, err := ts.condenseSearch(ctx, "它的卦辞呢？", "", []historyItem{{Role: "user", Content: "乾卦是什么？"}, {Role: "assistant", Content: replyFused}}, memory.Choice{})
	if err != nil || byHistory == nil || byHistory.Standalone != byConv.Standalone {
		t.Errorf("with history: %+v, %v; want %q", byHistory, err, byConv.Standalone)
	}
	if cq, err := ts.condenseSearch(ctx, "乾卦的卦辞是什么？", "s1", nil, memory.Choice{}); err != nil || cq.Rewritten || cq.Standalone != "乾卦的卦辞是什么？" {
		t.Errorf("a self-contained question: %+v, %v", cq, err)
	}
	if _, err := ts.condenseSearch(ctx, "它呢？", "", []historyItem{{Role: "robot", Content: "x"}}, memory.Choice{}); err == nil {
		t.Error("a bad history role was accepted")
	}

	failing := newMixServer(t, up, func(s *mixSetup, _ llm.Models) {
		s.condenser = mix.CondenseFunc(func(context.Context, []llm.Message, string) (string, string, error) {
			return "", "", errors.New("condense model down")
		})
	})
	cq, err := failing.condenseSearch(ctx, "它的卦辞呢？", "", []historyItem{{Role: "user", Content: "乾卦是什么？"}, {Role: "assistant", Content: replyFused}}, memory.Choice{})
	if err != nil || cq.Standalone != "它的卦辞呢？" || cq.Rewritten || !strings.Contains(cq.Error, "condense model down") {
		t.Errorf("failed rewrite: %+v, %v; want the question as sent and the error", cq, err)
	}
}

// TestMixChatWithoutKnowledgeBases: on a server with knowledge bases on but
// none made and none configured as the default, mix_chat answers without
// the knowledge-base answerer instead of failing it; a request naming a
// knowledge base still gets it.
func TestMixChatWithoutKnowledgeBases(t *testing.T) {
	ts := newKBTestServerWith(t, nil, func(o *Options) {
		cfg := mix.DefaultConfig()
		cfg.Answerers = []string{rag.LLM, rag.KB}
		mixer, err := mix.New(cfg, mix.Deps{
			Models: o.Models, Answerers: map[string]rag.Answerer{rag.LLM: o.Chat, rag.KB: o.KB},
		})
		if err != nil {
			t.Fatal(err)
		}
		o.Mixer = mixer
	})
	var reply struct {
		Answers []struct {
			From  string `json:"from"`
			Error string `json:"error"`
		} `json:"answers"`
		Failed []string `json:"failed"`
	}
	status := ts.postJSON(t, "/chat/mix_chat", map[string]any{"query": "What is a leave policy?", "stream": false}, &reply)
	if status != http.StatusOK {
		t.Fatalf("mix_chat with no knowledge base: HTTP %d %+v", status, reply)
	}
	if len(reply.Answers) != 1 || reply.Answers[0].From != rag.LLM || len(reply.Failed) > 0 {
		t.Errorf("answers %+v, failed %v: want the model's alone", reply.Answers, reply.Failed)
	}
	// Naming a knowledge base that does not exist is still the client's
	// mistake.
	if status := ts.postJSON(t, "/chat/mix_chat", map[string]any{"query": "q", "knowledge_base_name": "nope", "stream": false}, nil); status != http.StatusNotFound {
		t.Errorf("mix_chat naming an unknown knowledge base: HTTP %d, want 404", status)
	}
}
