package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
)

// newMemoryServer is a server with the offline model and a memory.Manager
// with the offline parts.
func newMemoryServer(t *testing.T) (*testServer, *memory.Manager) {
	t.Helper()
	store := openSQLite(t)
	models, _ := offlineModels()
	cfg := memory.DefaultConfig()
	mgr, err := memory.NewManager(store, cfg, offlineMemory())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	s := New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), Memory: mgr, MaxBodyBytes: 64 << 10})
	return &testServer{Server: s, store: store, models: models, http: serveTest(t, s)}, mgr
}

// TestChatMemoryStrategies: the memory test through /chat/chat with every
// strategy the request's memory field can name.
func TestChatMemoryStrategies(t *testing.T) {
	ts, mgr := newMemoryServer(t)
	for _, strategy := range mgr.Strategies() {
		t.Run(strategy, func(t *testing.T) {
			conv := "name-" + strategy
			for _, q := range []string{"我的名字是李雷。", "我叫什么名字？"} {
				code, out := ts.post(t, "/chat/chat", map[string]any{"query": q, "conversation_id": conv, "memory": strategy})
				if code != http.StatusOK {
					t.Fatalf("chat %q: %d %v", q, code, out)
				}
				if q == "我叫什么名字？" && !strings.Contains(out["text"].(string), "李雷") {
					t.Errorf("answer %q lacks 李雷", out["text"])
				}
			}
		})
	}
	if code, _ := ts.post(t, "/chat/chat", map[string]any{"query": "q", "conversation_id": "x", "memory": "nope"}); code != http.StatusBadRequest {
		t.Errorf("unknown strategy: status %d, want 400", code)
	}
}

// TestLongTermMemoryAPI: close a conversation, read and edit the user's
// memory, and the system messages of a new conversation; users stay apart.
func TestLongTermMemoryAPI(t *testing.T) {
	ts, _ := newMemoryServer(t)
	for _, c := range []map[string]any{{"id": "a1", "user_id": "alice"}, {"id": "b1", "user_id": "bob"}} {
		if code, out := ts.post(t, "/conversations", c); code != http.StatusCreated {
			t.Fatalf("create %v: %d %v", c, code, out)
		}
	}
	ts.ask(t, "a1", "我的名字是李雷，我住在杭州。", "")
	ts.ask(t, "b1", "I like green tea.", "")

	code, out := ts.post(t, "/conversations/a1/close", nil)
	if code != http.StatusOK || out["consolidated"] != true || out["user_id"] != "alice" {
		t.Fatalf("close: %d %v", code, out)
	}
	code, alice := ts.get(t, "/users/alice/memory")
	if code != http.StatusOK || !strings.Contains(alice["summary"].(string)+factsOf(alice), "李雷") {
		t.Fatalf("alice's memory: %d %v", code, alice)
	}
	code, bob := ts.get(t, "/users/bob/memory")
	if code != http.StatusOK || strings.Contains(bob["summary"].(string)+factsOf(bob), "李雷") {
		t.Errorf("bob's memory: %d %v", code, bob)
	}

	// Alice's next conversation starts with her memory; the answer uses it.
	ts.post(t, "/conversations", map[string]any{"id": "a2", "user_id": "alice"})
	code, sys := ts.get(t, "/conversations/a2/system")
	if code != http.StatusOK || !strings.Contains(strings.Join(stringsOf(sys["messages"]), "\n"), "李雷") {
		t.Fatalf("a2 system messages: %d %v", code, sys)
	}
	if ans := ts.ask(t, "a2", "我叫什么名字？", ""); !strings.Contains(ans, "李雷") {
		t.Errorf("a2 answer %q lacks the remembered name", ans)
	}
	// Bob's does not.
	ts.post(t, "/conversations", map[string]any{"id": "b2", "user_id": "bob"})
	if _, sys := ts.get(t, "/conversations/b2/system"); len(stringsOf(sys["messages"])) != 0 {
		t.Errorf("b2 system messages: %v", sys)
	}
	if ans := ts.ask(t, "b2", "我叫什么名字？", ""); strings.Contains(ans, "李雷") {
		t.Errorf("bob's conversation knows alice's name: %q", ans)
	}

	// Editing the system messages of a running conversation.
	code, out = ts.send(t, http.MethodPut, "/conversations/b2/system", map[string]any{"messages": []string{"用户最喜欢的卦是乾卦。"}})
	if code != http.StatusOK {
		t.Fatalf("put system: %d %v", code, out)
	}
	if ans := ts.ask(t, "b2", "我最喜欢的卦是哪一卦？", ""); !strings.Contains(ans, "乾卦") {
		t.Errorf("answer %q ignores the new system message", ans)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"messages": []string{" "}}, map[string]any{"messages": make([]string, 21)}} {
		if code, _ := ts.send(t, http.MethodPut, "/conversations/b2/system", bad); code != http.StatusBadRequest {
			t.Errorf("put system %v: status %d, want 400", bad, code)
		}
	}

	// Editing and deleting a user's memory.
	code, out = ts.send(t, http.MethodPut, "/users/bob/memory", map[string]any{"summary": "Bob drinks tea.", "facts": []string{"Bob lives in Lyon."}})
	if code != http.StatusOK || out["summary"] != "Bob drinks tea." || factsOf(out) != "Bob lives in Lyon." {
		t.Fatalf("put memory: %d %v", code, out)
	}
	if _, bob := ts.get(t, "/users/bob/memory"); bob["summary"] != "Bob drinks tea." {
		t.Errorf("bob's memory after put: %v", bob)
	}
	if code, _ := ts.send(t, http.MethodPut, "/users/bob/memory", map[string]any{}); code != http.StatusBadRequest {
		t.Errorf("empty put: status %d, want 400", code)
	}
	if code, _ := ts.send(t, http.MethodDelete, "/users/bob/memory", nil); code != http.StatusNoContent {
		t.Errorf("delete: status %d", code)
	}
	if _, bob := ts.get(t, "/users/bob/memory"); bob["summary"] != "" || factsOf(bob) != "" {
		t.Errorf("bob's memory after delete: %v", bob)
	}
	if _, alice2 := ts.get(t, "/users/alice/memory"); alice2["summary"] != alice["summary"] {
		t.Errorf("deleting bob's memory changed alice's: %v", alice2)
	}

	for _, path := range []string{"/conversations/missing/close", "/conversations/missing/system"} {
		method := http.MethodPost
		if strings.HasSuffix(path, "system") {
			method = http.MethodGet
		}
		if code, _ := ts.send(t, method, path, nil); code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", method, path, code)
		}
	}
}

// Without a long-term memory the endpoints say so.
func TestMemoryNotConfigured(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, r := range [][2]string{{http.MethodPost, "/conversations/c/close"}, {http.MethodGet, "/users/u/memory"}, {http.MethodGet, "/conversations/c/system"}} {
		if code, _ := ts.send(t, r[0], r[1], nil); code != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", r[0], r[1], code)
		}
	}
}

func stringsOf(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func factsOf(m map[string]any) string { return strings.Join(stringsOf(m["facts"]), "\n") }

// TestChatWhileCompressing: background compression runs after the reply
// and never delays one. The memory model hangs in its first summary call;
// the chat replies of the conversation keep coming, from the raw turns,
// while that call is still in flight.
func TestChatWhileCompressing(t *testing.T) {
	up := llmtest.NewServer(t, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "never seen", Delay: time.Hour}
	}))
	store := openSQLite(t)
	models, _ := offlineModels()
	cfg := memory.DefaultConfig()
	cfg.Strategy = memory.SummaryBuffer
	cfg.Compression.TriggerTokens = 50
	cfg.Compression.GroupSize = 1
	cfg.Compression.CloseTimeout = 10 * time.Millisecond
	upCfg := up.Config()
	upCfg.MaxRetries = -1
	mgr, err := memory.NewManager(store, cfg, memory.Options{Model: llm.NewClient(upCfg), ModelName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgr.Close() // cancels the hung call (and says so)
		up.WaitIdle(5 * time.Second)
	})
	s := New(Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), Memory: mgr, MaxBodyBytes: 64 << 10})
	ts := &testServer{Server: s, store: store, models: models, http: serveTest(t, s)}

	ts.ask(t, "c", "我的名字是李雷，我住在杭州，我在学习周易。", "")
	ts.ask(t, "c", "乾卦象征什么？请详细说说它的卦辞和象辞。", "")
	deadline := time.Now().Add(10 * time.Second)
	for up.InFlight() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the background summary call never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 3 {
		if ans := ts.ask(t, "c", "我叫什么名字？", ""); !strings.Contains(ans, "李雷") {
			t.Errorf("reply %d during compression = %q, want the name from the raw turns", i, ans)
		}
	}
	if up.InFlight() != 1 {
		t.Error("the hung summary call ended before the replies: a reply waited for compression")
	}
	if st := mgr.Stats(); st.Pending != 1 || st.Jobs < 1 {
		t.Errorf("Stats() = %+v, want one job pending", st)
	}
	if n := len(mustTurnsOf(t, store, "c")); n != 5 {
		t.Errorf("%d turns stored, want 5", n)
	}
}

func mustTurnsOf(t *testing.T, s memory.Store, conv string) []memory.Turn {
	t.Helper()
	turns, err := s.Turns(context.Background(), conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}
