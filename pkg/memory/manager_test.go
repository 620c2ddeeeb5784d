package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// newManager returns a manager over store with cfg adjusted by adjust,
// closed at the end of the test. Options with no model and no parts get
// the offline ones (pkg/extractive), as the wiring gives them.
func newManager(t testing.TB, store memory.Store, adjust func(*memory.Config), opts memory.Options) *memory.Manager {
	t.Helper()
	if opts.Model == nil && opts.Rewriter == nil && opts.Summarizer == nil && opts.Extractor == nil {
		opts = offline(opts)
	}
	cfg := memory.DefaultConfig()
	cfg.TimeZone = "UTC"
	if adjust != nil {
		adjust(&cfg)
	}
	m, err := memory.NewManager(store, cfg, opts)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return m
}

// offline returns opts with the offline rewriter, summarizer and
// extractor, counting tokens with opts.Tokens.
func offline(opts memory.Options) memory.Options {
	opts.Rewriter = extractive.NewRewriter(nil, opts.Tokens)
	opts.Summarizer = extractive.NewSummarizer(opts.Tokens)
	opts.Extractor = extractive.NewExtractor()
	return opts
}

// add stores the question/answer pairs as turns of conv and tells m.
func add(t testing.TB, s memory.Store, m *memory.Manager, conv string, pairs ...string) []memory.Turn {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatal("add: odd number of messages")
	}
	var out []memory.Turn
	for i := 0; i < len(pairs); i += 2 {
		turn, err := s.AppendTurn(context.Background(), conv,
			memory.Message{Role: llm.RoleUser, Content: pairs[i]}, memory.Message{Role: llm.RoleAssistant, Content: pairs[i+1]})
		if err != nil {
			t.Fatalf("AppendTurn: %v", err)
		}
		if m != nil {
			m.Remember(context.Background(), conv, turn)
		}
		out = append(out, turn)
	}
	return out
}

func flush(t testing.TB, m *memory.Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// tokens counts msgs as the manager does with its default counter.
func tokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		ls := strings.Split(m.Content, "\n")
		n += len(ls) - 1 + 4
		for _, l := range ls {
			n += llm.Estimate(l)
		}
	}
	return n
}

func joined(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	return b.String()
}

// englishChat is a conversation whose facts sit in its first turns.
var englishChat = []string{
	"My name is Li Lei and I live in Hangzhou.", "Nice to meet you, Li Lei. Hangzhou is a beautiful city.",
	"I am learning the Zhouyi with my teacher Wang Fang.", "Wang Fang sounds like a patient teacher.",
	"What does the hexagram Qian stand for?", "Qian stands for heaven, strength and creative force.",
	"And the hexagram Kun?", "Kun stands for earth, receptivity and devotion.",
	"How many lines does a hexagram have?", "A hexagram has six lines, read from the bottom up.",
	"What is a changing line?", "A changing line is a line that turns into its opposite when the oracle is cast.",
	"How do people cast the oracle with coins?", "They toss three coins six times and note each line.",
	"Which commentary should I read first?", "The Great Commentary, Xici, explains the whole system.",
	"Is the Xici hard to read?", "Some passages are dense, but a good translation helps a lot.",
	"Thanks, that is helpful.", "You are welcome. Enjoy your study.",
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, filepath.Join(t.TempDir(), "memory.db"))
	m := newManager(t, store, func(c *memory.Config) {
		c.MaxTokenLimit = 160
		c.WindowK = 2
		c.RecentTurns = 2
		c.Compression.TriggerTokens = 60
		c.Compression.GroupSize = 2
		c.Compression.SummaryMaxTokens = 80
	}, memory.Options{})
	add(t, store, m, "c", englishChat...)
	flush(t, m)
	all := memory.History(mustTurns(t, store, "c"))

	tests := []struct {
		strategy, question string
		check              func(t *testing.T, msgs []llm.Message)
	}{
		{memory.Buffer, "anything", func(t *testing.T, msgs []llm.Message) {
			if !slices.Equal(msgs, all) {
				t.Errorf("buffer = %d messages, want the %d of the history", len(msgs), len(all))
			}
		}},
		{memory.Window, "anything", func(t *testing.T, msgs []llm.Message) {
			if !slices.Equal(msgs, all[len(all)-4:]) {
				t.Errorf("window = %q, want the last 2 exchanges", joined(msgs))
			}
		}},
		{memory.TokenBuffer, "anything", func(t *testing.T, msgs []llm.Message) {
			if len(msgs) < 2 || !slices.Equal(msgs, all[len(all)-len(msgs):]) {
				t.Fatalf("token_buffer = %q, want a suffix of the history", joined(msgs))
			}
			if tokens(append(slices.Clone(msgs), all[len(all)-len(msgs)-2:len(all)-len(msgs)]...)) <= 160 {
				t.Errorf("token_buffer left out a turn that fits")
			}
		}},
		{memory.Summary, "anything", func(t *testing.T, msgs []llm.Message) {
			if msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Content, "Summary") {
				t.Fatalf("summary strategy starts with %q, want the summary", msgs[0].Content)
			}
			if !strings.Contains(msgs[0].Content, "Li Lei") {
				t.Errorf("the summary lost the user's name: %q", msgs[0].Content)
			}
			if msgs[len(msgs)-1] != all[len(all)-1] {
				t.Errorf("summary strategy does not end with the last message")
			}
		}},
		{memory.SummaryBuffer, "anything", func(t *testing.T, msgs []llm.Message) {
			if msgs[0].Role != llm.RoleSystem || msgs[len(msgs)-1] != all[len(all)-1] {
				t.Errorf("summary_buffer = %q, want the summary then the recent turns", joined(msgs))
			}
		}},
		{memory.Entity, "Where does Li Lei live?", func(t *testing.T, msgs []llm.Message) {
			if msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Content, "Hangzhou") {
				t.Errorf("entity strategy: %q, want the fact about Li Lei's home", joined(msgs))
			}
			if !slices.Equal(msgs[len(msgs)-4:], all[len(all)-4:]) {
				t.Errorf("entity strategy lacks the recent turns")
			}
		}},
		{memory.KnowledgeGraph, "What am I learning?", func(t *testing.T, msgs []llm.Message) {
			if msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Content, "user | am learning | the Zhouyi") {
				t.Errorf("knowledge_graph strategy: %q, want the triple about learning", joined(msgs))
			}
		}},
		{memory.Retrieval, "Who is my teacher?", func(t *testing.T, msgs []llm.Message) {
			if msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Content, "my teacher Wang Fang") {
				t.Errorf("retrieval strategy: %q, want the old message about the teacher", joined(msgs))
			}
			if msgs[len(msgs)-1] != all[len(all)-1] {
				t.Errorf("retrieval strategy lacks the recent turns")
			}
		}},
		{memory.Compressed, "Is it hard to read?", func(t *testing.T, msgs []llm.Message) {
			if len(msgs) != 1 || !strings.Contains(msgs[0].Content, "Facts from the conversation") || !strings.Contains(msgs[0].Content, "Xici") {
				t.Errorf("compressed strategy: %q, want the facts about the Xici", joined(msgs))
			}
		}},
		{memory.Compressed, "How many coins are tossed when casting hexagrams?", func(t *testing.T, msgs []llm.Message) {
			if !slices.Equal(msgs, all[len(all)-len(msgs):]) || len(msgs) == 0 {
				t.Errorf("compressed strategy on a self-contained question: %q, want the last exchanges verbatim", joined(msgs))
			}
		}},
		{memory.Combined, "Who is my teacher?", func(t *testing.T, msgs []llm.Message) {
			// The budget is too small for the summary's share here; see
			// TestCombined.
			if !strings.Contains(joined(msgs), "my teacher Wang Fang") || msgs[len(msgs)-1] != all[len(all)-1] {
				t.Errorf("combined strategy: %q, want the retrieved message and the recent turns", joined(msgs))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			msgs, err := m.Recall(ctx, "c", tt.question, tt.strategy, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				t.Fatal("no history")
			}
			if n := tokens(msgs); tt.strategy != memory.Buffer && n > 160 {
				t.Errorf("%d tokens, over the budget of 160:\n%s", n, joined(msgs))
			}
			tt.check(t, msgs)
		})
	}

	if got := m.Strategies(); len(got) != 10 {
		t.Errorf("Strategies() = %v, want 10", got)
	}
	if _, err := m.Recall(ctx, "c", "q", "nope", -1); err == nil {
		t.Error("an unknown strategy was accepted")
	}
	// history_len asks for the last turns whatever the strategy.
	msgs, err := m.Recall(ctx, "c", "q", memory.Summary, 1)
	if err != nil || !slices.Equal(msgs, all[len(all)-2:]) {
		t.Errorf("Recall(historyLen 1) = %q, %v; want the last turn", joined(msgs), err)
	}
	// A conversation that does not exist has no history.
	if msgs, err := m.Recall(ctx, "missing", "q", "", -1); err != nil || msgs != nil {
		t.Errorf("Recall(missing) = %v, %v; want nothing", msgs, err)
	}
}

// TestCombined: the combined strategy holds what bears on the question —
// the facts about the entity it names, retrieved messages — and the recent
// turns within the budget, in that order, and shows nothing twice: a
// summary line or fact that repeats a message shown is left out (with
// room for every message, only the messages remain).
func TestCombined(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int{200, 260, 700} {
		store := openSQLite(t, ":memory:")
		m := newManager(t, store, func(c *memory.Config) {
			c.MaxTokenLimit = budget
			c.Compression.TriggerTokens = 100
			c.Compression.SummaryMaxTokens = 80
		}, memory.Options{})
		add(t, store, m, "c", englishChat...)
		flush(t, m)
		msgs, err := m.Recall(ctx, "c", "Where does Li Lei live and who is his teacher?", memory.Combined, -1)
		if err != nil {
			t.Fatal(err)
		}
		text := joined(msgs)
		if !strings.Contains(text, "my teacher Wang Fang") || !strings.Contains(text, "Hangzhou") {
			t.Errorf("budget %d: combined lacks the facts: %s", budget, text)
		}
		if n := tokens(msgs); n > budget {
			t.Errorf("budget %d: %d tokens, over the budget", budget, n)
		}
		all := memory.History(mustTurns(t, store, "c"))
		if msgs[len(msgs)-1] != all[len(all)-1] {
			t.Errorf("budget %d: combined does not end with the recent turns", budget)
		}
		// Nothing twice: each sentence of the conversation appears once.
		for _, h := range all {
			if c := strings.Count(text, h.Content); c > 1 {
				t.Errorf("budget %d: %q shown %d times:\n%s", budget, h.Content, c, text)
			}
		}
		if budget == 700 {
			for _, msg := range msgs {
				if msg.Role == llm.RoleSystem && !strings.HasPrefix(msg.Content, "Earlier in this conversation:") {
					t.Errorf("budget 700: %q repeats messages that are all shown", msg.Content)
				}
			}
		}
	}
}

func mustTurns(t testing.TB, s memory.Store, conv string) []memory.Turn {
	t.Helper()
	turns, err := s.Turns(context.Background(), conv, 0)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// TestRememberName is the memory test: after "我的名字是李雷。" the question
// "我叫什么名字？" is answered with the name, whatever the strategy, by the
// offline model through the LLM-chat answerer, before and after background
// compression.
func TestRememberName(t *testing.T) {
	ctx := context.Background()
	models := llm.NewRegistry("offline")
	models.Add("offline", llm.NewOffline(llm.OfflineOptions{}))
	answerer := chat.New(models, chat.Options{})
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{})
	for _, strategy := range m.Strategies() {
		t.Run(strategy, func(t *testing.T) {
			conv := "name-" + strategy
			first, err := answerer.Answer(ctx, rag.Query{Text: "我的名字是李雷。"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			add(t, store, m, conv, "我的名字是李雷。", first.Text)
			for _, when := range []string{"before compression", "after compression"} {
				if when == "after compression" {
					flush(t, m)
				}
				history, err := m.Recall(ctx, conv, "我叫什么名字？", strategy, -1)
				if err != nil {
					t.Fatal(err)
				}
				ans, err := answerer.Answer(ctx, rag.Query{Text: "我叫什么名字？", History: history}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(ans.Text, "李雷") {
					t.Errorf("%s: answer %q lacks 李雷; history:\n%s", when, ans.Text, joined(history))
				}
			}
		})
	}
}

// TestRecallSeesNewTurns: turns appended by another writer (another
// process) are seen by the next Recall.
func TestRecallSeesNewTurns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	store := openSQLite(t, path)
	other := openSQLite(t, path)
	m := newManager(t, store, nil, memory.Options{})
	add(t, store, m, "c", "first question", "first answer")
	if _, err := m.Recall(ctx, "c", "q", memory.Retrieval, -1); err != nil {
		t.Fatal(err)
	}
	// Rank the same question before the turn arrives: the ranking of the
	// old messages must not be served again once there are more.
	if _, err := m.Search(ctx, "c", "zebra", 1); err != nil {
		t.Fatal(err)
	}
	add(t, other, nil, "c", "the zebra question", "the zebra answer")
	msgs, err := m.Recall(ctx, "c", "zebra", memory.TokenBuffer, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(joined(msgs), "zebra answer") {
		t.Errorf("Recall missed a turn written elsewhere: %q", joined(msgs))
	}
	hits, err := m.Search(ctx, "c", "zebra", 1)
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Content, "zebra") {
		t.Errorf("Search(zebra) = %+v, %v", hits, err)
	}
	// A deleted conversation has no memory any more.
	if err := other.DeleteConversation(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if msgs, err := m.Recall(ctx, "c", "q", "", -1); err != nil || msgs != nil {
		t.Errorf("Recall after delete = %q, %v", joined(msgs), err)
	}
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) { c.Compression.TriggerTokens = 60 }, memory.Options{})
	add(t, store, m, "c", englishChat...)
	flush(t, m)
	v, err := m.Inspect(ctx, "c", memory.SummaryBuffer)
	if err != nil {
		t.Fatal(err)
	}
	if v.Turns != len(englishChat)/2 || v.Digest.Summary == "" || v.Digest.Through == 0 || len(v.Messages) == 0 || v.Tokens == 0 || v.Pending {
		t.Errorf("Inspect = %+v", v)
	}
	if _, err := m.Inspect(ctx, "missing", ""); err == nil {
		t.Error("Inspect(missing) succeeded")
	}
}

func ExampleManager_Recall() {
	ctx := context.Background()
	store, _ := sqlite.OpenConversations(ctx, ":memory:")
	defer store.Close()
	m, _ := memory.NewManager(store, memory.DefaultConfig(), memory.Options{})
	defer m.Close()
	turn, _ := store.AppendTurn(ctx, "c", memory.Message{Content: "My name is Li Lei."}, memory.Message{Content: "Hello, Li Lei."})
	m.Remember(ctx, "c", turn)
	history, _ := m.Recall(ctx, "c", "What is my name?", memory.TokenBuffer, -1)
	for _, msg := range history {
		fmt.Println(msg.Role+":", msg.Content)
	}
	// Output:
	// user: My name is Li Lei.
	// assistant: Hello, Li Lei.
}
