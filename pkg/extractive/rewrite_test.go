package extractive_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// followUp is the FollowUp memory gives a rewriter: every exchange of
// history is recent.
func followUp(history []llm.Message, q string) memory.FollowUp {
	f := memory.FollowUp{History: history, Question: q}
	for _, h := range history {
		if h.Role == llm.RoleUser || h.Role == llm.RoleAssistant {
			f.Recent = append(f.Recent, memory.Line{Role: h.Role, Text: h.Content})
		}
	}
	return f
}

var eventsHistory = []llm.Message{
	{Role: llm.RoleUser, Content: "What automotive-industry events are there in Shanghai this spring?"},
	{Role: llm.RoleAssistant, Content: "Auto Shanghai runs in April and the China Auto Forum in May."},
}

func TestRewriter(t *testing.T) {
	ctx := context.Background()
	r := extractive.NewRewriter(nil, nil)
	c, err := r.Rewrite(ctx, followUp(eventsHistory, "Can you give me their registration links?"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Skipped || !c.Extractive {
		t.Fatalf("offline rewrite = %+v, want an extractive rewrite", c)
	}
	// The pronoun resolved in place, not the previous question appended.
	if c.Standalone != "Can you give me Auto Shanghai's registration links?" {
		t.Errorf("standalone = %q, want the pronoun resolved", c.Standalone)
	}
	if !strings.Contains(c.Context, "Auto Shanghai") {
		t.Errorf("context = %q", c.Context)
	}
	zh := []llm.Message{{Role: llm.RoleUser, Content: "坤卦的卦辞是什么？"}, {Role: llm.RoleAssistant, Content: "坤：元亨，利牝马之贞。"}}
	c, err = r.Rewrite(ctx, followUp(zh, "它的象辞呢？"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Skipped || c.Standalone != "坤卦的象辞呢？" {
		t.Errorf("zh standalone = %+v, want 坤卦的象辞呢？", c)
	}

	// Its own judgement: a question naming its subject stands alone,
	// unless the policy says always.
	for _, q := range []string{"What does the hexagram Qian stand for?", "乾卦的卦辞是什么意思？", "学习周易应该从哪里入手？"} {
		c, err := r.Rewrite(ctx, followUp(eventsHistory, q))
		if err != nil || !c.Skipped || c.Reason != memory.ReasonSelfContained || c.Standalone != q || c.Context != "" {
			t.Errorf("Rewrite(%q) = %+v, %v; want skipped as self-contained", q, c, err)
		}
		f := followUp(eventsHistory, q)
		f.Always = true
		if c, err := r.Rewrite(ctx, f); err != nil || c.Skipped || !c.Extractive {
			t.Errorf("Rewrite(%q), always = %+v, %v; want a rewrite", q, c, err)
		}
	}
}

// TestRewriterAsksOfKnownSubject: a question that names nothing but speaks
// of "the" something, after turns naming a thing the knowledge bases know,
// is about that thing; without the vocabulary, or when it names something
// itself, it stands alone.
func TestRewriterAsksOfKnownSubject(t *testing.T) {
	ctx := context.Background()
	known := extractive.NewRewriter(extractive.NameList{"Acorn Guest House", "Cambridge"}, nil)
	plain := extractive.NewRewriter(nil, nil)
	history := []llm.Message{{Role: llm.RoleUser, Content: "Which one would you suggest?"},
		{Role: llm.RoleAssistant, Content: "How about Acorn Guest House?"}}
	for _, tt := range []struct {
		r    *extractive.Rewriter
		q    string
		want string
	}{
		{known, "Can I get the phone number?", "Can I get the phone number of Acorn Guest House?"},
		{known, "What is the address of Cambridge station?", "What is the address of Cambridge station?"},
		{known, "Can you recommend a museum nearby?", "Can you recommend a museum nearby?"},
		{plain, "Can I get the phone number?", "Can I get the phone number?"},
	} {
		c, err := tt.r.Rewrite(ctx, followUp(history, tt.q))
		if err != nil {
			t.Fatal(err)
		}
		if c.Standalone != tt.want {
			t.Errorf("%q → %q, want %q", tt.q, c.Standalone, tt.want)
		}
	}
}

// TestRewriterNeededPairs: the context is read from the exchanges back to
// the latest question that named its subject.
func TestRewriterNeededPairs(t *testing.T) {
	ctx := context.Background()
	r := extractive.NewRewriter(nil, nil)
	pair := func(q, a string) []llm.Message {
		return []llm.Message{{Role: llm.RoleUser, Content: q}, {Role: llm.RoleAssistant, Content: a}}
	}
	for _, c := range []struct {
		name       string
		history    [][]llm.Message
		question   string
		want, omit []string
	}{
		{"after a named subject", [][]llm.Message{pair("乾卦的卦辞是什么？", "元亨利贞。"), pair("屯卦讲的是什么？", "万物始生之难。")},
			"它和蒙卦是什么关系？", []string{"万物始生之难"}, []string{"乾卦", "元亨利贞"}},
		{"a chain of follow-ups", [][]llm.Message{pair("坤卦的卦辞是什么？", "元亨，利牝马之贞。"), pair("乾卦的卦辞是什么？", "元亨利贞。"), pair("它的初九呢？", "潜龙勿用。")},
			"那九二呢？", []string{"潜龙勿用"}, []string{"坤卦", "牝马"}},
	} {
		var h []llm.Message
		for _, p := range c.history {
			h = append(h, p...)
		}
		got, err := r.Rewrite(ctx, followUp(h, c.question))
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range append(c.want, c.omit...) {
			if want := i < len(c.want); strings.Contains(got.Context, w) != want {
				t.Errorf("%s: context holds %q: %v, want %v: %q", c.name, w, !want, want, got.Context)
			}
		}
	}
}

// TestRewriterWithDocuments: with a vocabulary that knows documents, a
// question naming none of their things after turns naming one is asked of
// that thing, however the turns wrote its name; a question naming one, or
// addressing a part by itself, stands alone.
func TestRewriterWithDocuments(t *testing.T) {
	ctx := context.Background()
	v := places(extractive.Thing{Name: "ALLENBELL", Kind: "hotel"}, extractive.Thing{Name: "ACORN GUEST HOUSE", Kind: "hotel"})
	v.Known.Titles = []docstruct.Title{{Title: "中华人民共和国劳动法", Aliases: []string{"劳动法"}}}
	r := extractive.NewRewriter(v, nil)
	for _, tt := range []struct {
		history []string
		q, want string
		skipped bool
	}{
		{[]string{"Can you make a suggestion?", "Yes, I would suggest allenbell"}, "Are the bathrooms clean?",
			"Are the bathrooms clean of Allenbell?", false},
		{[]string{"Can you make a suggestion?", "Yes, I would suggest allenbell"}, "Is Acorn Guest House cheaper?",
			"Is Acorn Guest House cheaper?", true},
		// The thing named before three exchanges of booking it.
		{[]string{"I need a place in the north.", "How about Acorn Guest House?", "Book it for two nights.",
			"I'm sorry, that is not available.", "Try one night then.", "I could not book that either.", "Try Sunday.",
			"Booked. Reference number is XK42."}, "Will I have a good view from the room?",
			"Will I have a good view from the room of Acorn Guest House?", false},
		// Saying what one wants of the thing offered asks about it; other
		// sentences do not.
		{[]string{"I need a guesthouse.", "How about Acorn Guest House?"}, "I really need a quiet room.",
			"I really need a quiet room of Acorn Guest House.", false},
		{[]string{"I need a guesthouse.", "How about Acorn Guest House?"}, "Thanks, that's all.", "Thanks, that's all.", true},
		{[]string{"劳动法第三条是什么？", "第三条 劳动者享有平等就业的权利。"}, "那第四条呢？", "劳动法第四条是什么？", false},
		{[]string{"乾卦的卦辞是什么？", "乾：元亨利贞。", "什么是太极？", "易有太极，是生两仪。"}, "那坤卦呢？", "什么是坤卦？", false},
	} {
		c, err := r.Rewrite(ctx, followUp(msgs(tt.history...), tt.q))
		if err != nil {
			t.Fatal(err)
		}
		if c.Standalone != tt.want || c.Skipped != tt.skipped {
			t.Errorf("Rewrite(%q) = %q (skipped %v), want %q (skipped %v)", tt.q, c.Standalone, c.Skipped, tt.want, tt.skipped)
		}
	}
}
