package memory_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// modelOf returns a client of srv that does not retry.
func modelOf(srv *llmtest.Server) *llm.Client {
	cfg := srv.Config()
	cfg.MaxRetries = -1
	return llm.NewClient(cfg)
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// compressEarly makes every turn beyond the first trigger compression.
func compressEarly(c *memory.Config) {
	c.Compression.TriggerTokens = 50
	c.Compression.GroupSize = 1
	c.Compression.Timeout = time.Hour
	c.Compression.CloseTimeout = 50 * time.Millisecond
}

// TestCompressionNeverBlocks: while the model is stuck in a summary call,
// Remember and Recall return at once with the raw turns.
func TestCompressionNeverBlocks(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "never seen", Delay: time.Hour}
	}))
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, compressEarly, memory.Options{Model: modelOf(srv), ModelName: "test"})
	add(t, store, m, "c", englishChat[:8]...)
	waitFor(t, "the summary call", func() bool { return srv.InFlight() == 1 })

	// The call is still running: none of these may wait for it.
	add(t, store, m, "c", "What is my name?", "Your name is Li Lei.")
	msgs, err := m.Recall(ctx, "c", "What is my name?", memory.Summary, -1)
	if err != nil {
		t.Fatal(err)
	}
	if srv.InFlight() != 1 {
		t.Fatal("the summary call ended before Recall returned: Recall waited for it")
	}
	text := joined(msgs)
	if !strings.Contains(text, "My name is Li Lei") || !strings.Contains(text, "Your name is Li Lei.") || strings.Contains(text, "never seen") {
		t.Errorf("Recall during compression = %q, want the raw turns", text)
	}
	if s := m.Stats(); s.Pending != 1 {
		t.Errorf("Stats().Pending = %d, want 1", s.Pending)
	}
	// Close gives up on the stuck call after CloseTimeout and cancels it.
	if err := m.Close(); err == nil {
		t.Error("Close with a stuck job reported no error")
	}
	if !srv.WaitIdle(5 * time.Second) {
		t.Error("the summary call was not cancelled at Close")
	}
	if n := len(mustTurns(t, store, "c")); n != 5 {
		t.Errorf("%d turns stored, want 5", n)
	}
}

// TestCrashMidCompression: a compression cut off midway (the process
// stopping) loses no turn; the next process compresses them.
func TestCrashMidCompression(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	srv := llmtest.NewServer(t, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Text: "never seen", Delay: time.Hour}
	}))
	store, err := sqlite.OpenConversations(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := memory.DefaultConfig()
	compressEarly(&cfg)
	m, err := memory.NewManager(store, cfg, memory.Options{Model: modelOf(srv)})
	if err != nil {
		t.Fatal(err)
	}
	add(t, store, m, "c", englishChat...)
	waitFor(t, "the summary call", func() bool { return srv.InFlight() == 1 })
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Shutdown(cancelled); err == nil {
		t.Error("Shutdown cut a job short without saying so")
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store = openSQLite(t, path)
	turns := mustTurns(t, store, "c")
	if len(turns) != len(englishChat)/2 {
		t.Fatalf("%d turns after the crash, want %d", len(turns), len(englishChat)/2)
	}
	for i, turn := range turns {
		if turn.Question.Content != englishChat[2*i] || turn.Answer.Content != englishChat[2*i+1] {
			t.Errorf("turn %d = %q / %q", turn.ID, turn.Question.Content, turn.Answer.Content)
		}
	}
	st, err := store.State(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Digest.Through != 0 || st.Digest.Summary != "" {
		t.Errorf("digest after the cut = %+v, want none", st.Digest)
	}
	// The next process (offline) compresses them.
	m2 := newManager(t, store, compressEarly, memory.Options{})
	add(t, store, m2, "c", "One more question?", "One more answer.")
	flush(t, m2)
	if st, err := store.State(ctx, "c"); err != nil || st.Digest.Through == 0 || !strings.Contains(st.Digest.Summary, "Li Lei") {
		t.Errorf("digest after restart = %+v, %v", st.Digest, err)
	}
}

// TestCompressionFailure: a failing model leaves the digest and the turns
// as they were and counts the failure; the next turn retries.
func TestCompressionFailure(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, llmtest.WithHandler(func(openai.ChatCompletionRequest) llmtest.Reply {
		return llmtest.Reply{Status: http.StatusInternalServerError}
	}))
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, compressEarly, memory.Options{Model: modelOf(srv)})
	add(t, store, m, "c", englishChat[:8]...)
	flush(t, m)
	s := m.Stats()
	if s.Failures == 0 {
		t.Fatalf("Stats() = %+v, want failures", s)
	}
	st, err := store.State(ctx, "c")
	if err != nil || st.Digest.Through != 0 {
		t.Errorf("digest after failures = %+v, %v; want none", st.Digest, err)
	}
	msgs, err := m.Recall(ctx, "c", "q", memory.Summary, -1)
	if err != nil || !strings.Contains(joined(msgs), englishChat[0]) {
		t.Errorf("Recall after failures = %q, %v; want the raw turns", joined(msgs), err)
	}
	calls := srv.Calls()
	add(t, store, m, "c", "again?", "again.")
	flush(t, m)
	if srv.Calls() == calls {
		t.Error("the next turn did not retry compression")
	}
}

// promptReplies answers the memory prompts as a model would.
func promptReplies(req openai.ChatCompletionRequest) llmtest.Reply {
	p := req.Messages[len(req.Messages)-1].Content
	switch {
	case strings.Contains(p, "Progressively summarize the lines of conversation provided"):
		return llmtest.Reply{Text: "Li Lei, from Hangzhou, studies the Zhouyi with Wang Fang."}
	case strings.Contains(p, "ENTITY | fact"):
		return llmtest.Reply{Text: "user | The user's name is Li Lei.\nWang Fang | Wang Fang teaches the user the Zhouyi.\nnot a fact line"}
	case strings.Contains(p, "subject | relation | object"):
		return llmtest.Reply{Text: "(user | is learning | the Zhouyi)\nNONE"}
	case strings.Contains(p, "durable facts about the user"):
		return llmtest.Reply{Text: "- The user is called Li Lei.\n- The user lives in Hangzhou."}
	}
	return llmtest.Reply{Text: "unexpected prompt"}
}

// TestModelDigest: with a generative model, summary, entity facts and
// triples come from the memory prompts.
func TestModelDigest(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t, llmtest.WithHandler(promptReplies))
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) {
		c.Compression.TriggerTokens = 60
		c.RecentTurns = 1
	}, memory.Options{Model: modelOf(srv), ModelName: "test"})
	add(t, store, m, "c", englishChat[:8]...)
	flush(t, m)
	if s := m.Stats(); s.Failures != 0 {
		t.Fatalf("Stats() = %+v", s)
	}
	for _, tt := range []struct{ strategy, question, want string }{
		{memory.Summary, "anything", "Li Lei, from Hangzhou, studies the Zhouyi with Wang Fang."},
		{memory.Entity, "Who teaches me, and is Wang Fang strict?", "Wang Fang — Wang Fang teaches the user the Zhouyi."},
		{memory.KnowledgeGraph, "What am I learning?", "user | is learning | the Zhouyi"},
	} {
		msgs, err := m.Recall(ctx, "c", tt.question, tt.strategy, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(joined(msgs), tt.want) {
			t.Errorf("%s: %q lacks %q", tt.strategy, joined(msgs), tt.want)
		}
	}
	var summaryPrompt string
	for _, r := range srv.Requests() {
		if p := r.Messages[0].Content; strings.HasPrefix(p, "Progressively summarize") {
			summaryPrompt = p
		}
	}
	if !strings.Contains(summaryPrompt, "Human: My name is Li Lei and I live in Hangzhou.") {
		t.Errorf("summary prompt lacks the conversation lines:\n%s", summaryPrompt)
	}
}

// TestCompressionBounded: however long the conversation, the digest stays
// within its limits.
func TestCompressionBounded(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) {
		c.Compression.TriggerTokens = 60
		c.Compression.SummaryMaxTokens = 60
		c.Compression.MaxEntities = 3
		c.Compression.MaxFactsPerEntity = 2
		c.Compression.MaxTriples = 4
	}, memory.Options{})
	for range 5 {
		add(t, store, m, "c", englishChat...)
	}
	flush(t, m)
	st, err := store.State(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	d := st.Digest
	if n := llm.Estimate(d.Summary) + strings.Count(d.Summary, "\n"); n > 60 {
		t.Errorf("summary has %d tokens, over 60", n)
	}
	if len(d.Entities) > 3 || len(d.Triples) > 4 {
		t.Errorf("%d entities and %d triples, over 3 and 4", len(d.Entities), len(d.Triples))
	}
	for _, e := range d.Entities {
		if len(e.Facts) > 2 {
			t.Errorf("entity %s has %d facts, over 2", e.Name, len(e.Facts))
		}
	}
	if d.Through == 0 || d.ExtractedThrough != int64(5*len(englishChat)/2) {
		t.Errorf("digest covers turns %d (summary) and %d (extraction)", d.Through, d.ExtractedThrough)
	}
}

func TestNewManagerErrors(t *testing.T) {
	store := openSQLite(t, ":memory:")
	cfg := memory.DefaultConfig()
	cfg.Strategy = "nope"
	cfg.Compression.GroupSize = 0
	_, err := memory.NewManager(store, cfg, memory.Options{})
	if err == nil || !strings.Contains(err.Error(), "memory.strategy") || !strings.Contains(err.Error(), "memory.compression.group_size") {
		t.Errorf("NewManager with a bad config: %v", err)
	}
	if _, err := memory.NewManager(nil, memory.DefaultConfig(), memory.Options{}); err == nil {
		t.Error("NewManager(nil store) succeeded")
	}
	// After Close, Remember does nothing and does not panic.
	m := newManager(t, store, nil, memory.Options{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m.Remember(context.Background(), "c", memory.Turn{})
	if err := m.Close(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second Close: %v", err)
	}
}

// TestCompressionTriggers: compression starts when the turns the summary
// does not cover cross the token threshold or, when set, the word
// threshold, and folds the oldest exchanges GroupSize at a time until they
// are back under it.
func TestCompressionTriggers(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name          string
		tokens, words int
		wantFolded    bool
	}{
		{"below both", 100000, 0, false},
		{"words", 100000, 40, true},
		{"tokens", 100, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := openSQLite(t, ":memory:")
			m := newManager(t, store, func(c *memory.Config) {
				c.Compression.TriggerTokens = tt.tokens
				c.Compression.TriggerWords = tt.words
				c.Compression.GroupSize = 2
			}, memory.Options{})
			turns := add(t, store, m, "c", englishChat...)
			flush(t, m)
			st, err := store.State(ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			through := st.Digest.Through
			if folded := through > 0; folded != tt.wantFolded {
				t.Fatalf("summary covers turns through %d; want folded %v", through, tt.wantFolded)
			}
			if !tt.wantFolded {
				return
			}
			if through%2 != 0 {
				t.Errorf("summary covers turns through %d: not whole groups of 2", through)
			}
			// What is left uncovered is under the threshold, and one group
			// less would not have been.
			words, tokens := 0, 0
			for _, turn := range turns[through:] {
				words += len(strings.Fields(turn.Question.Content)) + len(strings.Fields(turn.Answer.Content))
				tokens += llm.Estimate(turn.Question.Content) + llm.Estimate(turn.Answer.Content)
			}
			if tt.words > 0 && words > tt.words {
				t.Errorf("%d words left uncovered, over %d", words, tt.words)
			}
			if tt.words == 0 && tokens > tt.tokens {
				t.Errorf("about %d tokens left uncovered, over %d", tokens, tt.tokens)
			}
			if len(turns[through:]) == 0 {
				t.Error("every turn folded: the last group should have stayed verbatim")
			}
		})
	}
}
