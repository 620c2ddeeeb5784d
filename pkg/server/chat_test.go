package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// testServer is a Server over a real SQLite store in a temp dir, with the
// offline model as default and, when up is not nil, the model "test" served
// by up.
type testServer struct {
	*Server
	store  memory.Store
	models *llm.Registry
	http   *httptest.Server
}

func newTestServer(t testing.TB, up *llmtest.Server) *testServer {
	t.Helper()
	store := openSQLite(t)
	models, _ := offlineModels()
	if up != nil {
		models.Add("test", llm.NewClient(llm.ClientConfig{Name: "test", BaseURL: up.URL(), Model: "test", Timeout: 10 * time.Second, MaxRetries: 1, RetryBackoff: time.Millisecond}))
	}
	s := New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), MaxBodyBytes: 64 << 10})
	return &testServer{Server: s, store: store, models: models, http: serveTest(t, s)}
}

// openSQLite is a conversation store in a temp dir, closed with the test.
func openSQLite(t testing.TB) *sqlite.Conversations {
	t.Helper()
	s, err := sqlite.OpenConversations(context.Background(), filepath.Join(t.TempDir(), "mixchat.db"))
	return storetest.Opened(t, s, err)
}

// offlineModels is a registry with the offline model as its default.
func offlineModels() (*llm.Registry, *llm.Offline) {
	offline := llm.NewOffline(llm.OfflineOptions{})
	models := llm.NewRegistry("offline")
	models.Add("offline", offline)
	return models, offline
}

// offlineMemory is memory.Options with the offline rewriter, summarizer
// and extractor, as the wiring gives them without a model.
func offlineMemory() memory.Options {
	return memory.Options{Rewriter: extractive.NewRewriter(nil, nil), Summarizer: extractive.NewSummarizer(nil), Extractor: extractive.NewExtractor()}
}

// serveTest serves s's handler on a test server closed with the test.
func serveTest(t testing.TB, s *Server) *httptest.Server {
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// readEvents decodes the data of every event of the SSE stream r (lines
// "data: {...}", as Chatchat's clients parse them) into Ts.
func readEvents[T any](t *testing.T, r io.Reader) []T {
	t.Helper()
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev T
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// requestBody is body as a request's: nil none, a string as it is,
// anything else as JSON.
func requestBody(body any) io.Reader {
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		return bytes.NewReader(j)
	}
}

// postStream posts body (requestBody) to url
// and returns the reply, closed at the end of t, failing t unless it is an
// event stream.
func postStream(t *testing.T, url string, body any) io.Reader {
	t.Helper()
	resp, err := http.Post(url, "application/json", requestBody(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	return resp.Body
}

// post sends body as JSON and returns the status and the decoded reply.
func (ts *testServer) post(t *testing.T, path string, body any) (int, map[string]any) {
	t.Helper()
	return ts.send(t, http.MethodPost, path, body)
}

// send makes a request with a body (requestBody) and decodes the reply.
func (ts *testServer) send(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return sendJSON(t, method, ts.http.URL+path, body)
}

// sendJSON makes a request to url with a body (requestBody) and decodes the
// reply, if any.
func sendJSON(t *testing.T, method, url string, body any) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, requestBody(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: reply is not JSON: %q", method, url, raw)
		}
	}
	return resp.StatusCode, out
}

func (ts *testServer) get(t *testing.T, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(ts.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// ask sends a non-streamed /chat/chat and returns its text.
func (ts *testServer) ask(t *testing.T, conv, query, model string) string {
	t.Helper()
	code, out := ts.post(t, "/chat/chat", map[string]any{"query": query, "conversation_id": conv, "model_name": model})
	if code != http.StatusOK {
		t.Fatalf("chat %q: status %d: %v", query, code, out)
	}
	return out["text"].(string)
}

// The design's memory test: a name given in one turn is recalled in the
// next, and only in that conversation.
func TestChatMemory(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.WithHandler(func(req openai.ChatCompletionRequest) llmtest.Reply {
		// A stand-in for a real model: it can only know the name from the
		// prompt it is sent.
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Content)
		}
		p := prompt.String()
		if strings.Contains(p, "我叫什么名字") && strings.Contains(p, "我的名字是李雷") {
			return llmtest.Reply{Text: "你叫李雷。"}
		}
		return llmtest.Reply{Text: "我不知道你的名字。"}
	}))
	ts := newTestServer(t, up)
	for _, model := range []string{"offline", "test"} {
		t.Run(model, func(t *testing.T) {
			ts.ask(t, "conv-"+model, "我的名字是李雷。", model)
			if got := ts.ask(t, "conv-"+model, "我叫什么名字？", model); !strings.Contains(got, "李雷") {
				t.Errorf("second turn: %q does not name 李雷", got)
			}
			if got := ts.ask(t, "other-"+model, "我叫什么名字？", model); strings.Contains(got, "李雷") {
				t.Errorf("new conversation: %q names 李雷", got)
			}
			if got := ts.ask(t, "", "我叫什么名字？", model); strings.Contains(got, "李雷") {
				t.Errorf("no conversation: %q names 李雷", got)
			}
		})
	}
	// The prompt the real model saw is the design's with_history prompt.
	reqs := up.Requests()
	var found bool
	for _, r := range reqs {
		last := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(last, "Current conversation:\nHuman: 我的名字是李雷。") && strings.HasSuffix(strings.TrimSpace(last), "Human: 我叫什么名字？\nAI:") {
			found = true
		}
	}
	if !found {
		t.Errorf("no request carried the with_history prompt; last: %+v", reqs[len(reqs)-1].Messages)
	}
}

func TestChatClientHistory(t *testing.T) {
	up := llmtest.NewServer(t)
	ts := newTestServer(t, up)
	// A client-sent history is used as is, as separate messages, and
	// nothing from server memory is added.
	ts.ask(t, "h1", "记住：暗号是乾元。", "test")
	code, out := ts.post(t, "/chat/chat", map[string]any{
		"query": "暗号是什么？", "conversation_id": "h1", "model_name": "test",
		"history": []map[string]string{{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}},
	})
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, out)
	}
	reqs := up.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) != 3 || msgs[0].Content != "你好" || msgs[1].Role != "assistant" || msgs[2].Content != "暗号是什么？" {
		t.Errorf("messages sent upstream = %+v, want the client's history then the question", msgs)
	}
	// history_len 0 turns server memory off.
	code, _ = ts.post(t, "/chat/chat", map[string]any{"query": "暗号是什么？", "conversation_id": "h1", "model_name": "test", "history_len": 0})
	if code != http.StatusOK {
		t.Fatal(code)
	}
	reqs = up.Requests()
	if msgs := reqs[len(reqs)-1].Messages; len(msgs) != 1 || strings.Contains(msgs[0].Content, "乾元") {
		t.Errorf("history_len 0 sent %+v", msgs)
	}
}

func TestChatStream(t *testing.T) {
	up := llmtest.NewServer(t)
	up.Script(llmtest.Reply{Text: "乾卦象征天。元亨利贞。"})
	ts := newTestServer(t, up)
	stream := postStream(t, ts.http.URL+"/chat/chat", `{"query":"乾卦是什么？","conversation_id":"s1","stream":true,"model_name":"test"}`)
	events := readEvents[chatChunk](t, stream)
	if len(events) < 3 {
		t.Fatalf("got %d events, want several chunks and a final one", len(events))
	}
	var text strings.Builder
	id := events[0].MessageID
	for _, e := range events {
		text.WriteString(e.Text)
		if e.MessageID != id || id == "" {
			t.Errorf("message_id %q differs from the first %q", e.MessageID, id)
		}
	}
	last := events[len(events)-1]
	if !last.Done || last.TurnID != 1 || last.Usage == nil || last.Usage.CompletionTokens == 0 {
		t.Errorf("final event = %+v, want done with turn 1 and usage", last)
	}
	if text.String() != "乾卦象征天。元亨利贞。" {
		t.Errorf("streamed text = %q", text.String())
	}
	turns, err := ts.store.Turns(context.Background(), "s1", 0)
	if err != nil || len(turns) != 1 {
		t.Fatalf("turns = %v, %v", turns, err)
	}
	a := turns[0].Answer
	if a.ID != id || a.Content != text.String() || a.Metadata.Interrupted || a.Metadata.Model != "test" || a.Metadata.Usage == nil {
		t.Errorf("stored answer = %+v", a)
	}
	if q := turns[0].Question; q.Content != "乾卦是什么？" || q.Metadata.Source != "message" {
		t.Errorf("stored question = %+v", q)
	}
}

// A client that goes away mid-stream cancels the upstream call and its turn
// is stored as interrupted with what was sent.
func TestChatStreamClientDisconnect(t *testing.T) {
	up := llmtest.NewServer(t)
	long := strings.Repeat("周易讲变化。", 50)
	up.Script(llmtest.Reply{Text: long, ChunkDelay: 20 * time.Millisecond})
	ts := newTestServer(t, up)
	leaveMidStream(t, http.DefaultClient, ts.http.URL+"/chat/chat", `{"query":"讲讲周易","conversation_id":"d1","stream":true,"model_name":"test"}`,
		3, func(line string) bool { return strings.HasPrefix(line, "data: ") })
	interruptedAnswer(t, ts.store, "d1", long)
	if !up.WaitIdle(5 * time.Second) {
		t.Errorf("upstream call still running after the client left (in flight: %d)", up.InFlight())
	}
}

// leaveMidStream posts body to url as a streamed request through hc, reads
// the reply until n lines for which match holds have come, and leaves: the
// request is cancelled and the connection closed.
func leaveMidStream(t *testing.T, hc *http.Client, url, body string, n int, match func(line string) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for seen := 0; seen < n; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if match(line) {
			seen++
		}
	}
}

// interruptedAnswer waits for the one turn of conversation conv in store
// and returns its answer, failing t unless it is stored as interrupted
// with a non-empty prefix of reply whose original starts with it.
func interruptedAnswer(t *testing.T, store memory.Store, conv, reply string) memory.Message {
	t.Helper()
	var turns []memory.Turn
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if turns, _ = store.Turns(context.Background(), conv, 0); len(turns) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(turns) != 1 {
		t.Fatalf("interrupted turn not stored: %v", turns)
	}
	a := turns[0].Answer
	if !a.Metadata.Interrupted || a.Content == "" || !strings.HasPrefix(reply, a.Content) || len(a.Content) >= len(reply) {
		t.Errorf("stored answer = %q interrupted=%v, want a non-empty prefix of the reply", a.Content, a.Metadata.Interrupted)
	}
	if !strings.HasPrefix(a.Metadata.Original, a.Content) {
		t.Errorf("original %q does not start with the sent text %q", a.Metadata.Original, a.Content)
	}
	return a
}

// CutStreams (shutdown after the grace period) ends a reply in flight and
// stores it as interrupted.
func TestChatStreamCutOnShutdown(t *testing.T) {
	up := llmtest.NewServer(t)
	up.Script(llmtest.Reply{Text: strings.Repeat("变。", 200), ChunkDelay: 20 * time.Millisecond})
	ts := newTestServer(t, up)
	resp, err := http.Post(ts.http.URL+"/chat/chat", "application/json",
		strings.NewReader(`{"query":"变是什么","conversation_id":"x1","stream":true,"model_name":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ts.CutStreams()
	events := readEvents[chatChunk](t, br)
	if len(events) == 0 || !strings.Contains(events[len(events)-1].Error, "shutting down") {
		t.Errorf("last event = %+v, want a shutdown notice", events)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	turns, err := ts.store.Turns(context.Background(), "x1", 0)
	if err != nil || len(turns) != 1 || !turns[0].Answer.Metadata.Interrupted {
		t.Fatalf("turns = %+v, %v; want one interrupted turn", turns, err)
	}
}

func TestChatUpstreamErrors(t *testing.T) {
	up := llmtest.NewServer(t)
	ts := newTestServer(t, up)
	up.Script(llmtest.Reply{Status: 500, Body: `{"error":{"message":"model overloaded"}}`}, llmtest.Reply{Status: 500, Body: `{"error":{"message":"model overloaded"}}`})
	code, out := ts.post(t, "/chat/chat", map[string]any{"query": "hi", "conversation_id": "e1", "model_name": "test"})
	if code != http.StatusBadGateway || out["upstream_status"] != float64(500) || !strings.Contains(out["msg"].(string), "model overloaded") {
		t.Errorf("upstream 500 → %d %v, want 502 naming the cause", code, out)
	}
	if _, err := ts.store.Turns(context.Background(), "e1", 0); err == nil {
		t.Errorf("a failed reply stored a turn")
	}
	// Streamed: the error comes back before any event as a JSON error.
	up.Script(llmtest.Reply{Status: 400, Body: `{"error":{"message":"bad request upstream"}}`})
	code, out = ts.post(t, "/chat/chat", map[string]any{"query": "hi", "stream": true, "model_name": "test"})
	if code != http.StatusBadGateway || !strings.Contains(out["msg"].(string), "bad request upstream") {
		t.Errorf("streamed upstream 400 → %d %v", code, out)
	}
}

func TestChatBadRequests(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		name string
		body string
		code int
		msg  string
	}{
		{"empty body", ``, 400, "empty"},
		{"malformed", `{"query": "x"`, 400, "malformed JSON"},
		{"not an object", `[1,2]`, 400, "must be"},
		{"empty query", `{"query": "  "}`, 400, "query must not be empty"},
		{"query type", `{"query": 5}`, 400, `"query" must be a string`},
		{"stream type", `{"query": "x", "stream": "yes"}`, 400, `"stream" must be a boolean`},
		{"history type", `{"query": "x", "history": "none"}`, 400, `"history" must be an array`},
		{"history role", `{"query": "x", "history": [{"role": "robot", "content": "x"}]}`, 400, "history[0].role"},
		{"unknown model", `{"query": "x", "model_name": "gpt-9"}`, 400, "gpt-9"},
		{"temperature", `{"query": "x", "temperature": 3}`, 400, "temperature"},
		{"max tokens", `{"query": "x", "max_tokens": -1}`, 400, "max_tokens"},
		{"prompt", `{"query": "x", "prompt_name": "nope"}`, 400, "with_history"},
		{"trailing", `{"query": "x"} {}`, 400, "after the JSON"},
		{"too large", `{"query": "` + strings.Repeat("x", 70<<10) + `"}`, 413, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := ts.post(t, "/chat/chat", tt.body)
			msg, _ := out["msg"].(string)
			if code != tt.code || !strings.Contains(msg, tt.msg) {
				t.Errorf("status %d msg %q, want %d containing %q", code, msg, tt.code, tt.msg)
			}
		})
	}
	resp, err := http.Post(ts.http.URL+"/chat/chat", "multipart/form-data; boundary=x", strings.NewReader("--x--"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("multipart body → %d, want 415", resp.StatusCode)
	}
	if code, _ := ts.get(t, "/chat/chat"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /chat/chat → %d, want 405", code)
	}
	if code, out := ts.get(t, "/nope"); code != http.StatusNotFound || out["msg"] == nil {
		t.Errorf("unknown route → %d %v, want a JSON 404", code, out)
	}
}

func TestConversationsAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	code, out := ts.post(t, "/conversations", map[string]any{"name": "乾卦研读", "chat_type": "llm_chat"})
	if code != http.StatusCreated || out["id"] == "" {
		t.Fatalf("create → %d %v", code, out)
	}
	id := out["id"].(string)
	if code, _ := ts.post(t, "/conversations", map[string]any{"id": id}); code != http.StatusConflict {
		t.Errorf("duplicate id → %d, want 409", code)
	}
	if code, out := ts.post(t, "/conversations", map[string]any{"chat_type": "poetry"}); code != 400 || !strings.Contains(out["msg"].(string), "mix_chat") {
		t.Errorf("bad chat_type → %d %v", code, out)
	}
	ts.ask(t, id, "我的名字是李雷。", "")
	ts.ask(t, id, "我叫什么名字？", "")

	code, out = ts.get(t, "/conversations/"+id+"/messages")
	msgs, _ := out["messages"].([]any)
	if code != 200 || len(msgs) != 4 {
		t.Fatalf("messages → %d %v", code, out)
	}
	m0 := msgs[0].(map[string]any)
	m3 := msgs[3].(map[string]any)
	if m0["role"] != "user" || m0["turn_id"] != float64(1) || m3["turn_id"] != float64(2) || m3["role"] != "assistant" || m3["timestamp"].(float64) < 1.7e12 {
		t.Errorf("messages = %v", msgs)
	}
	if meta := m3["metadata"].(map[string]any); meta["extractive"] != true || meta["model"] == "" {
		t.Errorf("answer metadata = %v, want the offline model marked extractive", meta)
	}
	code, out = ts.get(t, "/conversations/"+id+"/memory")
	if items, _ := out["contents"].([]any); code != 200 || len(items) != 4 || items[0].(map[string]any)["content"] != "我的名字是李雷。" {
		t.Errorf("memory → %d %v", code, out)
	}

	// Feedback on the last answer.
	mid := m3["message_id"].(string)
	if code, out := ts.post(t, "/chat/feedback", map[string]any{"message_id": mid, "score": 90, "reason": "准确"}); code != 200 {
		t.Errorf("feedback → %d %v", code, out)
	}
	if code, _ := ts.post(t, "/chat/feedback", map[string]any{"message_id": mid, "score": 101}); code != 400 {
		t.Errorf("score 101 → %d, want 400", code)
	}
	if code, _ := ts.post(t, "/chat/feedback", map[string]any{"message_id": "nope", "score": 1}); code != 404 {
		t.Errorf("unknown message → %d, want 404", code)
	}
	msg, err := ts.store.Message(context.Background(), mid)
	if err != nil || msg.Metadata.Feedback == nil || msg.Metadata.Feedback.Score != 90 {
		t.Errorf("stored feedback = %+v, %v", msg.Metadata.Feedback, err)
	}

	// Rename, list with title search, delete.
	req, _ := http.NewRequest(http.MethodPatch, ts.http.URL+"/conversations/"+id, strings.NewReader(`{"name":"坤卦"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("rename → %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	ts.post(t, "/conversations", map[string]any{"name": "其他"})
	_, out = ts.get(t, "/conversations?q=坤")
	if list := out["conversations"].([]any); len(list) != 1 || list[0].(map[string]any)["name"] != "坤卦" {
		t.Errorf("title search = %v", list)
	}
	req, _ = http.NewRequest(http.MethodDelete, ts.http.URL+"/conversations/"+id, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete → %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if code, _ := ts.get(t, "/conversations/"+id); code != 404 {
		t.Errorf("deleted conversation → %d, want 404", code)
	}
	if code, _ := ts.get(t, "/conversations/"+id+"/messages"); code != 404 {
		t.Errorf("deleted conversation's messages → %d, want 404", code)
	}
}

// knowledge_base_chat and search_engine_chat store their exchange when the
// request names a conversation, so the conversation's history shows it.
func TestSingleAnswererRepliesAreStored(t *testing.T) {
	ts := newTestServer(t, nil)
	ctx := context.Background()
	kcfg := kb.DefaultConfig()
	kcfg.Dir = t.TempDir()
	kbs := newHashKB(t, kcfg, 128, ts.models)
	searcher, err := search.New(search.DefaultConfig(), search.Options{Models: ts.models})
	if err != nil {
		t.Fatal(err)
	}
	ts.kb, ts.search = kbs, searcher
	if _, err := kbs.Create(ctx, "notes", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		conv := fmt.Sprintf("single-%v", stream)
		body := map[string]any{"query": "乾卦是什么？", "knowledge_base_name": "notes", "conversation_id": conv, "stream": stream}
		raw, _ := json.Marshal(body)
		resp, err := http.Post(ts.http.URL+"/chat/knowledge_base_chat", "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"message_id":"`) {
			t.Fatalf("kb chat stream=%v → %d %s", stream, resp.StatusCode, b)
		}
		turns, err := ts.store.Turns(ctx, conv, 0)
		if err != nil || len(turns) != 1 || turns[0].Answer.Metadata.Extra["answerer"] != "kb" || turns[0].Question.Content != "乾卦是什么？" {
			t.Fatalf("stored turns = %+v, %v", turns, err)
		}
		if !strings.Contains(string(b), turns[0].Answer.ID) {
			t.Errorf("reply %s does not carry the stored message id %s", b, turns[0].Answer.ID)
		}
	}
	// Without conversation_id nothing is stored and no message id is given.
	code, out := ts.post(t, "/chat/knowledge_base_chat", map[string]any{"query": "乾", "knowledge_base_name": "notes"})
	if code != 200 || out["message_id"] != "" {
		t.Errorf("no conversation → %d message_id %v", code, out["message_id"])
	}
}
