package memory_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
)

func createConv(t testing.TB, s memory.Store, id, user string) {
	t.Helper()
	if _, err := s.CreateConversation(context.Background(), memory.Conversation{ID: id, UserID: user, ChatType: "mix_chat"}); err != nil {
		t.Fatal(err)
	}
}

// TestLongTermMemory: closing a conversation consolidates it into its
// user's memory; the user's next conversation starts with it; another
// user's never sees it.
func TestLongTermMemory(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{})
	createConv(t, store, "a1", "alice")
	createConv(t, store, "b1", "bob")
	add(t, store, m, "a1", "我的名字是李雷。我住在杭州。", "你好，李雷。", "我在学习周易。", "很好。")
	add(t, store, m, "b1", "I like tea.", "Tea is nice.")
	flush(t, m)

	closed, err := m.CloseConversation(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if !closed.Consolidated || closed.UserID != "alice" || !strings.Contains(strings.Join(closed.Memory.Facts, "\n"), "我的名字是李雷") {
		t.Fatalf("CloseConversation = %+v", closed)
	}
	if !strings.Contains(closed.Memory.Summary, "李雷") {
		t.Errorf("alice's summary = %q", closed.Memory.Summary)
	}

	// Alice's new conversation starts with her memory.
	createConv(t, store, "a2", "alice")
	msgs, err := m.Recall(ctx, "a2", "我叫什么名字？", "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Role != llm.RoleSystem || !strings.HasPrefix(msgs[0].Content, "此前，用户谈到：") || // in the question's language
		!strings.Contains(msgs[0].Content, "李雷") {
		t.Fatalf("alice's new conversation starts with %q", joined(msgs))
	}
	// The model answers from it.
	ans, err := extractive.New(extractive.Options{}).Complete(ctx, llm.Request{Messages: append(msgs, llm.Message{Role: llm.RoleUser, Content: "我叫什么名字？"})})
	if err != nil || !strings.Contains(ans.Text, "李雷") {
		t.Errorf("answer from long-term memory = %q, %v", ans.Text, err)
	}

	// Bob's never does, nor does a conversation without a user.
	createConv(t, store, "b2", "bob")
	createConv(t, store, "anon", "")
	for _, conv := range []string{"b1", "b2", "anon"} {
		msgs, err := m.Recall(ctx, conv, "我叫什么名字？", "", -1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(joined(msgs), "李雷") || strings.Contains(joined(msgs), "杭州") {
			t.Errorf("conversation %s sees alice's memory: %q", conv, joined(msgs))
		}
	}
	if mem, err := m.UserMemory(ctx, "bob"); err != nil || !mem.Empty() {
		t.Errorf("bob's memory = %+v, %v; want empty", mem, err)
	}
	if _, err := m.CloseConversation(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	bob, err := m.UserMemory(ctx, "bob")
	if err != nil || strings.Contains(bob.Summary+strings.Join(bob.Facts, " "), "李雷") || !strings.Contains(bob.Summary, "tea") {
		t.Errorf("bob's memory = %+v, %v", bob, err)
	}
	alice, err := m.UserMemory(ctx, "alice")
	if err != nil || strings.Contains(alice.Summary+strings.Join(alice.Facts, " "), "tea") {
		t.Errorf("alice's memory = %+v, %v", alice, err)
	}

	// Closing again without new turns adds nothing; new turns are added.
	again, err := m.CloseConversation(ctx, "a1")
	if err != nil || again.Consolidated || again.Memory.Version != alice.Version {
		t.Errorf("second close = %+v, %v; want nothing consolidated", again, err)
	}
	add(t, store, m, "a1", "我最喜欢的卦是乾卦。", "乾卦象征天。")
	again, err = m.CloseConversation(ctx, "a1")
	if err != nil || !again.Consolidated || !strings.Contains(strings.Join(again.Memory.Facts, "\n"), "乾卦") {
		t.Errorf("close after new turns = %+v, %v", again, err)
	}
	if _, err := m.CloseConversation(ctx, "missing"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("CloseConversation(missing) = %v, want ErrNotFound", err)
	}
}

func TestUserMemoryEdit(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) { c.LongTerm.Prompt = "zh" }, memory.Options{})
	mem, err := m.SetUserMemory(ctx, "carol", "  学习周易三个月。 ", []string{"用户叫王芳。", " ", "用户住在北京。"})
	if err != nil {
		t.Fatal(err)
	}
	if mem.Summary != "学习周易三个月。" || len(mem.Facts) != 2 || mem.Version != 1 {
		t.Errorf("SetUserMemory = %+v", mem)
	}
	createConv(t, store, "c1", "carol")
	msgs, err := m.Recall(ctx, "c1", "你好", "", -1)
	if err != nil || len(msgs) != 1 || !strings.HasPrefix(msgs[0].Content, "此前，用户谈到：学习周易三个月。") || !strings.Contains(msgs[0].Content, "- 用户住在北京。") {
		t.Fatalf("new conversation starts with %q, %v", joined(msgs), err)
	}
	// The conversation's system messages are its own from now on.
	if sys, err := m.SystemMessages(ctx, "c1"); err != nil || len(sys) != 1 {
		t.Errorf("SystemMessages = %q, %v", sys, err)
	}
	if err := m.SetSystemMessages(ctx, "c1", []string{"回答要简短。"}); err != nil {
		t.Fatal(err)
	}
	msgs, err = m.Recall(ctx, "c1", "你好", "", -1)
	if err != nil || len(msgs) != 1 || msgs[0].Content != "回答要简短。" {
		t.Errorf("after SetSystemMessages Recall = %q, %v", joined(msgs), err)
	}
	if err := m.SetSystemMessages(ctx, "missing", nil); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("SetSystemMessages(missing) = %v", err)
	}
	if err := m.DeleteUserMemory(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if mem, err := m.UserMemory(ctx, "carol"); err != nil || !mem.Empty() || mem.Facts == nil {
		t.Errorf("after delete: %+v, %v", mem, err)
	}
	if _, err := m.UserMemory(ctx, ""); !errors.Is(err, memory.ErrNoUser) {
		t.Errorf("UserMemory(\"\") = %v", err)
	}
}

// TestLongTermModel: with a generative model, the user's facts come from
// the memory_facts prompt.
func TestLongTermModel(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, llmtest.WithHandler(promptReplies))
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{Model: modelOf(srv)})
	createConv(t, store, "c", "dave")
	add(t, store, m, "c", englishChat[:4]...)
	flush(t, m)
	closed, err := m.CloseConversation(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if closed.Memory.Summary != "Li Lei, from Hangzhou, studies the Zhouyi with Wang Fang." ||
		strings.Join(closed.Memory.Facts, "|") != "The user is called Li Lei.|The user lives in Hangzhou." {
		t.Errorf("memory = %+v", closed.Memory)
	}
}

// closeConcurrently closes conv once per manager, all at once, and returns
// how many of the closes consolidated the user's memory.
func closeConcurrently(t *testing.T, conv string, managers ...*memory.Manager) int {
	t.Helper()
	results := make([]memory.Closed, len(managers))
	errs := make([]error, len(managers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, m := range managers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = m.CloseConversation(context.Background(), conv)
		}()
	}
	close(start)
	wg.Wait()
	consolidated := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Consolidated {
			consolidated++
		}
	}
	return consolidated
}

// TestConcurrentClose: two closes of the same conversation at once (an
// explicit one and the idle closer) fold its turns into the user's memory
// once.
func TestConcurrentClose(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{})
	createConv(t, store, "e1", "erin")
	add(t, store, m, "e1", "My name is Erin and I live in Lyon.", "Hello, Erin.", "I study the Zhouyi.", "Good.")
	flush(t, m)
	consolidated := closeConcurrently(t, "e1", m, m, m, m)
	mem, err := m.UserMemory(ctx, "erin")
	if err != nil {
		t.Fatal(err)
	}
	if consolidated != 1 || mem.Version != 1 {
		t.Errorf("%d of 4 concurrent closes consolidated, memory version %d; want 1 and 1", consolidated, mem.Version)
	}
	if n := strings.Count(mem.Summary, "Lyon"); n != 1 {
		t.Errorf("summary mentions Lyon %d times, want once: %q", n, mem.Summary)
	}
}
