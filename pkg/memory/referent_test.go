package memory_test

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

func msgs(pairs ...string) []llm.Message {
	var out []llm.Message
	for i, p := range pairs {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		out = append(out, llm.Message{Role: role, Content: p})
	}
	return out
}

// TestRewriteFollowUp covers the failure modes of the offline rewrite:
// the referent named only by the assistant, by the topic, by a known name;
// possessives; demonstratives; words that only look like pronouns; and
// never a "(following up: …)" or "（上文：…）" suffix.
func TestRewriteFollowUp(t *testing.T) {
	restaurants := msgs("Okay, pick one for me please. It should be in the west.",
		"Okay, that leaves one option, and that's the La Margherita.")
	hotels := msgs("I need a guesthouse with free parking.",
		"The Acorn Guest House has free parking and wifi.")
	for _, tt := range []struct {
		name  string
		f     memory.FollowUp
		vocab memory.Vocabulary
		want  string
	}{
		{"assistant-only entity", memory.FollowUp{History: restaurants, Question: "Does it have a nice outdoor dining space?"}, nil,
			"Does La Margherita have a nice outdoor dining space?"},
		{"possessive", memory.FollowUp{History: restaurants, Question: "What are its opening hours?"}, nil,
			"What are La Margherita's opening hours?"},
		{"demonstrative noun", memory.FollowUp{History: hotels, Question: "How many stars does the hotel have?"}, nil,
			"How many stars does Acorn Guest House have?"},
		{"there", memory.FollowUp{History: hotels, Question: "How do I get there?"}, nil,
			"How do I get to Acorn Guest House?"},
		{"latest name wins", memory.FollowUp{History: msgs("Tell me about Pizza Hut.", "Pizza Hut is in the centre.",
			"Anything in the west?", "Yes, La Margherita."), Question: "Is it expensive?"}, nil, "Is La Margherita expensive?"},
		{"known name preferred", memory.FollowUp{History: msgs("Which city hosts Auto Shanghai?", "Shanghai hosts it every April."),
			Question: "When does it open?"}, memory.NameList{"Auto Shanghai"}, "When does Auto Shanghai open?"},
		{"topic", memory.FollowUp{Topic: []string{"Frank Zappa (musician)", "Disbandment"}, History: msgs("What group disbanded?",
			"The Mothers of Invention"), Question: "Why did he disband them?"}, nil, "Why did Frank Zappa disband them?"},
		{"her as possessive", memory.FollowUp{Topic: []string{"Courtney Love"}, Question: "What was her first album?"}, nil,
			"What was Courtney Love's first album?"},
		{"her as object", memory.FollowUp{Topic: []string{"Courtney Love"}, Question: "Who married her?"}, nil,
			"Who married Courtney Love?"},
		{"partial name completed", memory.FollowUp{Topic: []string{"Yoko Ono"}, History: msgs("Where was she born?", "Tokyo."),
			Question: "Was Yoko interested in music?"}, nil, "Was Yoko Ono interested in music?"},
		{"what else: says what it goes beyond", memory.FollowUp{Topic: []string{"Frank Zappa"}, History: msgs("What did he record?",
			"Well, he recorded Hot Rats in 1969."), Question: "What else did he record?"}, nil,
			"Besides he recorded Hot Rats in 1969, what else did Frank Zappa record?"},
		{"entity already named: unchanged", memory.FollowUp{History: restaurants, Question: "Is it near La Margherita?"}, nil,
			"Is it near La Margherita?"},
		{"codes and times are not entities", memory.FollowUp{History: msgs("Book La Margherita for two, please.",
			"Booked for 7 PM, reference number XK42B7."), Question: "Can you cancel it?"}, nil, "Can you cancel La Margherita?"},
		{"no entity: unchanged", memory.FollowUp{History: msgs("hello", "hi, how can I help?"), Question: "Why is it so?"}, nil,
			"Why is it so?"},
		{"zh assistant-only entity", memory.FollowUp{History: msgs("推荐一家北京的烤鸭店。", "推荐全聚德，它是百年老字号。"),
			Question: "它几点开门？"}, nil, "全聚德几点开门？"},
		{"zh definition", memory.FollowUp{History: msgs("什么是太极？", "易有太极，是生两仪。"), Question: "它生出什么？"}, nil,
			"太极生出什么？"},
		{"zh possessive 其", memory.FollowUp{History: msgs("什么是太极？", "易有太极。"), Question: "其含义是什么？"}, nil,
			"太极的含义是什么？"},
		{"zh classifier prefers its kind", memory.FollowUp{History: msgs("乾卦和太极有什么关系？", "乾卦象征天，太极是本原。"),
			Question: "这卦的卦辞是什么？"}, memory.NameList{"乾卦", "太极"}, "乾卦的卦辞是什么？"},
		{"zh known name from the assistant", memory.FollowUp{History: msgs("有什么适合初学者的卦？", "可以先读坤卦，卦辞浅显。"),
			Question: "该卦讲什么？"}, memory.NameList{"坤卦"}, "坤卦讲什么？"},
		{"zh person is not a book", memory.FollowUp{History: msgs("孔子写了什么？", "孔子作《春秋》。"), Question: "他生于哪一年？"}, nil,
			"孔子生于哪一年？"},
		{"zh it may be a book", memory.FollowUp{History: msgs("孔子写了什么？", "孔子作《春秋》。"), Question: "它讲什么？"}, nil,
			"《春秋》讲什么？"},
		{"zh not pronouns", memory.FollowUp{History: msgs("什么是太极？", "易有太极。"), Question: "因此应该读其他什么书？"}, nil,
			"关于太极，因此应该读其他什么书？"},
	} {
		if got := memory.RewriteFollowUp(tt.f, tt.vocab); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.f.Question, got, tt.want)
		}
	}
}
