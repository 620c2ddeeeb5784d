package memory_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/llm/llmtest"
	"github.com/mixchat/mixchat/pkg/memory"
)

// modelManager opens a manager on an in-memory SQLite store whose model
// is a scripted llmtest server; adjust, when not nil, changes its config.
func modelManager(t *testing.T, adjust func(*memory.Config)) (*llmtest.Server, memory.Store, *memory.Manager) {
	srv := llmtest.NewServer(t)
	store := openSQLite(t, ":memory:")
	return srv, store, newManager(t, store, adjust, memory.Options{Model: modelOf(srv)})
}

// eventsHistory is the conversation the registration-links question
// follows.
var eventsHistory = []llm.Message{
	{Role: llm.RoleUser, Content: "What automotive-industry events are there in Shanghai this spring?"},
	{Role: llm.RoleAssistant, Content: "Auto Shanghai runs in April and the China Auto Forum in May."},
}

func TestCondenseModel(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{Model: modelOf(srv), ModelName: "test"})

	// The first turn: no call.
	c, err := m.CondenseQuestion(ctx, nil, "Can you give me their registration links?")
	if err != nil || !c.Skipped || c.Reason != memory.ReasonNoHistory || c.Context != "" {
		t.Errorf("CondenseQuestion without history = %+v, %v; want skipped", c, err)
	}
	if srv.Calls() != 0 {
		t.Fatalf("%d model calls for a question without history", srv.Calls())
	}

	// With history the model decides, whatever the question looks like:
	// a question that names its subject is asked too, and its reply is
	// the standalone question, word for word.
	for _, q := range []string{"What does the hexagram Qian stand for?", "乾卦的卦辞是什么意思？"} {
		reply := "Which of the events, Auto Shanghai or the China Auto Forum, relates to: " + q
		if strings.ContainsRune(q, '乾') {
			reply = "上海车展与乾卦的卦辞是什么意思？"
		}
		srv.Script(llmtest.Reply{Text: "FACTS:\n- none\nQUESTION: " + reply})
		n := srv.Calls()
		c, err := m.CondenseQuestion(ctx, eventsHistory, q)
		if err != nil {
			t.Fatal(err)
		}
		if srv.Calls() != n+1 || c.Skipped || c.Standalone != reply {
			t.Errorf("CondenseQuestion(%q) = %+v after %d calls; want the model's question %q", q, c, srv.Calls()-n, reply)
		}
	}

	// A follow-up: one call, its reply parsed.
	srv.Script(llmtest.Reply{Text: "FACTS:\n- The events are Auto Shanghai (April) and the China Auto Forum (May).\n" +
		"QUESTION: Can you give me the registration links of the automotive-industry events in Shanghai this spring?"})
	standalone, facts, err := m.Condense(ctx, eventsHistory, "Can you give me their registration links?")
	if err != nil {
		t.Fatal(err)
	}
	if standalone != "Can you give me the registration links of the automotive-industry events in Shanghai this spring?" {
		t.Errorf("standalone = %q", standalone)
	}
	if facts != "The events are Auto Shanghai (April) and the China Auto Forum (May)." {
		t.Errorf("context = %q", facts)
	}
	reqs := srv.Requests()
	p := reqs[len(reqs)-1].Messages[0].Content
	for _, want := range []string{"Human: What automotive-industry events are there in Shanghai this spring?",
		"AI: Auto Shanghai runs in April", "Follow-up question: Can you give me their registration links?"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}

	// CondenseUsage reports the call's tokens; skipped rewrites cost none.
	srv.Script(llmtest.Reply{Text: "FACTS:\n- Auto Shanghai is in April.\nQUESTION: What do Auto Shanghai tickets cost?"})
	standalone, _, usage, err := m.CondenseUsage(ctx, eventsHistory, "What do they cost?")
	if err != nil || standalone != "What do Auto Shanghai tickets cost?" || usage.PromptTokens == 0 || usage.TotalTokens == 0 {
		t.Errorf("CondenseUsage = %q, %+v, %v; want the rewrite and its tokens", standalone, usage, err)
	}
	if _, _, usage, err := m.CondenseUsage(ctx, nil, "What do they cost?"); err != nil || usage.TotalTokens != 0 {
		t.Errorf("skipped CondenseUsage = %+v, %v; want no tokens", usage, err)
	}

	// The policy "never": no call, the question as asked.
	never := newManager(t, store, func(c *memory.Config) { c.Rewrite = memory.RewriteNever }, memory.Options{Model: modelOf(srv)})
	n := srv.Calls()
	if c, err := never.CondenseQuestion(ctx, eventsHistory, "What do they cost?"); err != nil || !c.Skipped ||
		c.Reason != memory.ReasonNever || c.Standalone != "What do they cost?" || srv.Calls() != n {
		t.Errorf("rewrite: never: %+v, %v, %d calls; want the question as asked and no call", c, err, srv.Calls()-n)
	}

	// A failing model: the question comes back unchanged with the error.
	srv.Script(llmtest.Reply{Status: http.StatusInternalServerError})
	q := "And their prices?"
	standalone, _, err = m.Condense(ctx, eventsHistory, q)
	if err == nil || standalone != q {
		t.Errorf("Condense on failure = %q, %v; want the question and an error", standalone, err)
	}
}

// TestCondenseLastPairs: at most Condense.MaxPairs pairs are read (each
// question a follow-up, so none of them makes the older ones unneeded).
func TestCondenseLastPairs(t *testing.T) {
	ctx := context.Background()
	srv, _, m := modelManager(t, func(c *memory.Config) { c.Condense.MaxPairs = 2 })
	var h []llm.Message
	for _, s := range []string{"one", "two", "three"} {
		h = append(h, llm.Message{Role: llm.RoleUser, Content: "and question " + s + "?"}, llm.Message{Role: llm.RoleAssistant, Content: "answer " + s})
	}
	h = append([]llm.Message{{Role: llm.RoleSystem, Content: "system note"}}, h...)
	srv.Script(llmtest.Reply{Text: "FACTS:\n- none\nQUESTION: What about question three?"})
	if _, err := m.CondenseQuestion(ctx, h, "And that one?"); err != nil {
		t.Fatal(err)
	}
	p := srv.Requests()[0].Messages[0].Content
	if strings.Contains(p, "question one") || strings.Contains(p, "system note") || !strings.Contains(p, "question two") || !strings.Contains(p, "answer three") {
		t.Errorf("prompt does not hold exactly the last 2 pairs:\n%s", p)
	}
}

// TestCompressedStrategyModel: the compressed strategy gives the model the
// facts the condense call extracted and the restated question.
func TestCompressedStrategyModel(t *testing.T) {
	ctx := context.Background()
	srv, store, m := modelManager(t, func(c *memory.Config) { c.Compression.TriggerTokens = 5000 })
	add(t, store, m, "c", eventsHistory[0].Content, eventsHistory[1].Content)
	flush(t, m)
	srv.Script(llmtest.Reply{Text: "FACTS:\n- Auto Shanghai runs in April.\nQUESTION: Can you give me the registration link of Auto Shanghai?"})
	msgs, err := m.Recall(ctx, "c", "Can you give me their registration links?", memory.Compressed, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := "Facts from the conversation needed for the next question:\nAuto Shanghai runs in April.\n" +
		"The next question, restated: Can you give me the registration link of Auto Shanghai?"
	if len(msgs) != 1 || msgs[0].Role != llm.RoleSystem || msgs[0].Content != want {
		t.Errorf("compressed = %q, want %q", joined(msgs), want)
	}
	// A failing model: the exchanges verbatim, no error.
	srv.Script(llmtest.Reply{Status: http.StatusInternalServerError})
	msgs, err = m.Recall(ctx, "c", "Can you give me their registration links?", memory.Compressed, -1)
	if err != nil || len(msgs) != 2 || msgs[0].Content != eventsHistory[0].Content {
		t.Errorf("compressed with a failing model = %q, %v; want the exchange", joined(msgs), err)
	}
}

// TestCondenseModelMalformed: a reply that is not a rewrite in the asked
// format is discarded — neither its question nor its text reaches the
// standalone question or the context — and the question is used as asked
// (no offline rewrite stands in).
func TestCondenseModelMalformed(t *testing.T) {
	ctx := context.Background()
	srv, _, m := modelManager(t, nil)
	history := []llm.Message{
		{Role: llm.RoleUser, Content: "Okay, pick one for me please. It should be in the west."},
		{Role: llm.RoleAssistant, Content: "Okay, that leaves one option, and that's the La Margherita."},
	}
	q := "Does it have a nice outdoor dining space?"
	for _, reply := range []string{
		"FAKE ANSWER: Below are the last exchanges of a conversation and a follow-up question.",
		"FACTS:\n- none\nQUESTION: Yes, La Margherita has a lovely terrace.",
		"FACTS:\n- none\nQUESTION: " + strings.Repeat("Does La Margherita have a nice outdoor dining space and ", 6) + "?",
		"It does have a terrace.\nFACTS:\n- none\nQUESTION: Does La Margherita have a nice outdoor dining space?",
	} {
		srv.Script(llmtest.Reply{Text: reply})
		c, err := m.CondenseQuestion(ctx, history, q)
		if err != nil {
			t.Fatal(err)
		}
		if c.Reason != memory.ReasonMalformed || c.Standalone != q || c.Extractive {
			t.Errorf("reply %q: condensed = %+v, want it discarded and the question as asked", reply, c)
		}
		if strings.Contains(c.Context, "FAKE") || strings.Contains(c.Context, "terrace") || strings.Contains(c.Context, "and Does") {
			t.Errorf("reply %q leaked into the context: %q", reply, c.Context)
		}
	}
}

// TestCondenseKeepsMemory: after a rewrite the context still holds what
// memory put before the conversation (the user's long-term memory, the
// summary), with the model and offline, but not the earlier exchanges
// memory quoted word for word.
func TestCondenseKeepsMemory(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	store := openSQLite(t, ":memory:")
	history := append([]llm.Message{
		{Role: llm.RoleSystem, Content: "关于用户，你已知道：\n- 用户住在北京"},
		{Role: llm.RoleSystem, Content: "此前对话的摘要：\nHuman: 我在学周易。"},
		{Role: llm.RoleSystem, Content: "本次对话中较早的相关内容：\n[1 Jan 2026]\nHuman: 乾卦是第几卦？\nAI: 第一卦。"},
	}, []llm.Message{{Role: llm.RoleUser, Content: "什么是太极？"}, {Role: llm.RoleAssistant, Content: "太极是万物的本原。"}}...)
	for _, opts := range []memory.Options{{Model: modelOf(srv)}, offline(memory.Options{})} {
		m := newManager(t, store, nil, opts)
		srv.Script(llmtest.Reply{Text: "事实：\n- 太极是万物的本原。\n问题：太极生出什么？"})
		c, err := m.CondenseQuestion(ctx, history, "它生出什么？")
		if err != nil {
			t.Fatal(err)
		}
		if c.Standalone != "太极生出什么？" {
			t.Errorf("standalone = %q", c.Standalone)
		}
		for _, want := range []string{"用户住在北京", "我在学周易", "太极是万物的本原"} {
			if !strings.Contains(c.Context, want) {
				t.Errorf("context %q lacks %q", c.Context, want)
			}
		}
		if !strings.Contains(c.Memory, "用户住在北京") || strings.Contains(c.Memory, "万物") {
			t.Errorf("memory = %q, want the system messages only", c.Memory)
		}
		if strings.Contains(c.Context, "第几卦") {
			t.Errorf("context %q repeats the quoted earlier exchanges", c.Context)
		}
	}
}

// TestCondenseModelReadsTheExchanges: the model reads the last exchanges
// that fit Condense (no offline rule trims them to those after a question
// naming its subject), and a question that seems to stand alone is asked
// too.
func TestCondenseModelReadsTheExchanges(t *testing.T) {
	ctx := context.Background()
	srv, _, m := modelManager(t, nil)
	pair := func(q, a string) []llm.Message {
		return []llm.Message{{Role: llm.RoleUser, Content: q}, {Role: llm.RoleAssistant, Content: a}}
	}
	h := append(pair("乾卦的卦辞是什么？", "元亨利贞。"), pair("屯卦讲的是什么？", "万物始生之难。")...)
	for _, q := range []string{"它和蒙卦是什么关系？", "学习周易应该从哪里入手？"} {
		n := len(srv.Requests())
		srv.Script(llmtest.Reply{Text: "FACTS:\n- none\nQUESTION: 屯卦和蒙卦是什么关系？"})
		c, err := m.CondenseQuestion(ctx, h, q)
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != n+1 || c.Skipped || c.Standalone != "屯卦和蒙卦是什么关系？" {
			t.Fatalf("%q: %d condense calls, %+v; want one call and its question", q, len(reqs)-n, c)
		}
		p := reqs[n].Messages[0].Content
		for _, w := range []string{"乾卦的卦辞", "元亨利贞", "屯卦讲的是什么", "万物始生之难"} {
			if !strings.Contains(p, w) {
				t.Errorf("prompt lacks %q:\n%s", w, p)
			}
		}
	}
}

// rewriterFunc is a Rewriter of a function.
type rewriterFunc func(ctx context.Context, f memory.FollowUp) (memory.Condensed, error)

func (r rewriterFunc) Rewrite(ctx context.Context, f memory.FollowUp) (memory.Condensed, error) {
	return r(ctx, f)
}

// TestRewritePolicy: memory.rewrite decides whether the Rewriter is asked
// and with what; what it returns is the standalone question.
func TestRewritePolicy(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	var got []memory.FollowUp
	r := rewriterFunc(func(_ context.Context, f memory.FollowUp) (memory.Condensed, error) {
		got = append(got, f)
		return memory.Condensed{Standalone: "rewritten: " + f.Question, Context: "a fact"}, nil
	})
	history := append([]llm.Message{{Role: llm.RoleSystem, Content: "关于用户，你已知道：\n- 用户住在北京"}}, eventsHistory...)
	for _, tt := range []struct {
		policy  string
		history []llm.Message
		calls   int
		always  bool
		want    string
	}{
		{memory.RewriteAuto, history, 1, false, "rewritten: What do they cost?"},
		{memory.RewriteAlways, history, 1, true, "rewritten: What do they cost?"},
		{memory.RewriteNever, history, 0, false, "What do they cost?"},
		{memory.RewriteAuto, nil, 0, false, "What do they cost?"},
	} {
		got = nil
		m := newManager(t, store, func(c *memory.Config) { c.Rewrite = tt.policy }, memory.Options{Rewriter: r})
		c, err := m.CondenseQuestion(ctx, tt.history, " What do they cost? ")
		if err != nil || c.Standalone != tt.want || len(got) != tt.calls {
			t.Errorf("%s, %d messages: %+v, %v after %d calls; want %q after %d", tt.policy, len(tt.history), c, err, len(got), tt.want, tt.calls)
			continue
		}
		if tt.calls == 0 {
			continue
		}
		f := got[0]
		if f.Always != tt.always || f.Question != "What do they cost?" || len(f.History) != 3 || len(f.Recent) != 2 ||
			f.Recent[1].Role != llm.RoleAssistant || f.Recent[1].Text != eventsHistory[1].Content {
			t.Errorf("%s: the rewriter read %+v", tt.policy, f)
		}
		if c.Context != "关于用户，你已知道：\n- 用户住在北京\na fact" {
			t.Errorf("%s: context %q, want memory then the rewriter's facts", tt.policy, c.Context)
		}
	}
	if err := (memory.Config{Rewrite: "sometimes"}).Validate(); err == nil || !strings.Contains(err.Error(), "memory.rewrite") {
		t.Errorf("Validate of rewrite: sometimes = %v", err)
	}
}
