package memory_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
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

	// First turn and self-contained questions: no call.
	for _, tt := range []struct {
		history  []llm.Message
		question string
		reason   string
	}{
		{nil, "Can you give me their registration links?", memory.ReasonNoHistory},
		{eventsHistory, "What does the hexagram Qian stand for?", memory.ReasonSelfContained},
		{eventsHistory, "乾卦的卦辞是什么意思？", memory.ReasonSelfContained},
	} {
		c, err := m.CondenseQuestion(ctx, tt.history, tt.question)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Skipped || c.Reason != tt.reason || c.Standalone != tt.question || c.Context != "" {
			t.Errorf("CondenseQuestion(%q) = %+v, want skipped (%s)", tt.question, c, tt.reason)
		}
	}
	if srv.Calls() != 0 {
		t.Fatalf("%d model calls for questions that need none", srv.Calls())
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
	if len(reqs) != 1 {
		t.Fatalf("%d calls, want 1", len(reqs))
	}
	p := reqs[0].Messages[0].Content
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

	// A failing model: the question comes back unchanged with the error.
	srv.Script(llmtest.Reply{Status: http.StatusInternalServerError})
	q := "And their prices?"
	standalone, _, err = m.Condense(ctx, eventsHistory, q)
	if err == nil || standalone != q {
		t.Errorf("Condense on failure = %q, %v; want the question and an error", standalone, err)
	}
}

func TestCondenseOffline(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, nil, memory.Options{Model: extractive.New(extractive.Options{})})
	c, err := m.CondenseQuestion(ctx, eventsHistory, "Can you give me their registration links?")
	if err != nil {
		t.Fatal(err)
	}
	if c.Skipped || !c.Extractive {
		t.Fatalf("offline condense = %+v, want an extractive rewrite", c)
	}
	// The pronoun resolved in place, not the previous question appended.
	if c.Standalone != "Can you give me Auto Shanghai's registration links?" {
		t.Errorf("standalone = %q, want the pronoun resolved", c.Standalone)
	}
	if !strings.Contains(c.Context, "Auto Shanghai") {
		t.Errorf("context = %q", c.Context)
	}
	zh := []llm.Message{{Role: llm.RoleUser, Content: "坤卦的卦辞是什么？"}, {Role: llm.RoleAssistant, Content: "坤：元亨，利牝马之贞。"}}
	c, err = m.CondenseQuestion(ctx, zh, "它的象辞呢？")
	if err != nil {
		t.Fatal(err)
	}
	if c.Skipped || c.Standalone != "坤卦的象辞呢？" {
		t.Errorf("zh standalone = %+v, want 坤卦的象辞呢？", c)
	}
}

// TestCondenseAsksOfKnownSubject: a question that names nothing but speaks
// of "the" something, after turns naming a thing the knowledge bases know,
// is about that thing; without the vocabulary, or when it names something
// itself, it stands alone.
func TestCondenseAsksOfKnownSubject(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	vocab := memory.NameList{"Acorn Guest House", "Cambridge"}
	m := newManager(t, store, nil, memory.Options{Model: extractive.New(extractive.Options{}), Vocabulary: vocab})
	plain := newManager(t, store, nil, memory.Options{Model: extractive.New(extractive.Options{})})
	history := []llm.Message{{Role: llm.RoleUser, Content: "Which one would you suggest?"},
		{Role: llm.RoleAssistant, Content: "How about Acorn Guest House?"}}
	for _, tt := range []struct {
		m    *memory.Manager
		q    string
		want string
	}{
		{m, "Can I get the phone number?", "Can I get the phone number of Acorn Guest House?"},
		{m, "What is the address of Cambridge station?", "What is the address of Cambridge station?"},
		{m, "Can you recommend a museum nearby?", "Can you recommend a museum nearby?"},
		{plain, "Can I get the phone number?", "Can I get the phone number?"},
	} {
		c, err := tt.m.CondenseQuestion(ctx, history, tt.q)
		if err != nil {
			t.Fatal(err)
		}
		if c.Standalone != tt.want {
			t.Errorf("%q → %q, want %q", tt.q, c.Standalone, tt.want)
		}
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
// standalone question or the context — and the offline rewrite is used.
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
		if c.Reason != memory.ReasonMalformed || c.Standalone != "Does La Margherita have a nice outdoor dining space?" {
			t.Errorf("reply %q: condensed = %+v, want it discarded and the offline rewrite", reply, c)
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
	for _, model := range []llm.Model{modelOf(srv), extractive.New(extractive.Options{})} {
		m := newManager(t, store, nil, memory.Options{Model: model})
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

// TestCondenseNeededPairs: the rewrite reads the exchanges back to the
// latest question that named its subject, and a question whose reference
// characters are inside ordinary words ("应该") is not rewritten.
func TestCondenseNeededPairs(t *testing.T) {
	ctx := context.Background()
	srv, _, m := modelManager(t, nil)
	pair := func(q, a string) []llm.Message {
		return []llm.Message{{Role: llm.RoleUser, Content: q}, {Role: llm.RoleAssistant, Content: a}}
	}
	cases := []struct {
		name       string
		history    [][]llm.Message
		question   string
		want, omit []string
	}{
		{"after a named subject", [][]llm.Message{pair("乾卦的卦辞是什么？", "元亨利贞。"), pair("屯卦讲的是什么？", "万物始生之难。")},
			"它和蒙卦是什么关系？", []string{"屯卦讲的是什么", "万物始生之难"}, []string{"乾卦", "元亨利贞"}},
		{"a chain of follow-ups", [][]llm.Message{pair("坤卦的卦辞是什么？", "元亨，利牝马之贞。"), pair("乾卦的卦辞是什么？", "元亨利贞。"), pair("它的初九呢？", "潜龙勿用。")},
			"那九二呢？", []string{"乾卦的卦辞", "它的初九呢", "潜龙勿用"}, []string{"坤卦"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h []llm.Message
			for _, p := range c.history {
				h = append(h, p...)
			}
			n := len(srv.Requests())
			srv.Script(llmtest.Reply{Text: "FACTS:\n- none\nQUESTION: 乾卦的九二爻辞是什么？"})
			if _, err := m.CondenseQuestion(ctx, h, c.question); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != n+1 {
				t.Fatalf("%d condense calls, want 1", len(reqs)-n)
			}
			p := reqs[n].Messages[0].Content
			for i, w := range append(c.want, c.omit...) {
				if want := i < len(c.want); strings.Contains(p, w) != want {
					t.Errorf("prompt holds %q: %v, want %v:\n%s", w, !want, want, p)
				}
			}
		})
	}
	c, err := m.CondenseQuestion(ctx, pair("屯卦讲的是什么？", "万物始生之难。"), "学习周易应该从哪里入手？")
	if err != nil || !c.Skipped || c.Reason != memory.ReasonSelfContained {
		t.Errorf("condense of a self-contained question = %+v, %v; want skipped", c, err)
	}
}
