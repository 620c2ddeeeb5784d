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

// TestRewriteThroughStructure: a follow-up naming a part, a move to the
// next or previous part, or another document is completed against the part
// the conversation last addressed and written as the question that
// addressed it.
func TestRewriteThroughStructure(t *testing.T) {
	laws := &extractive.Catalog{Known: docstruct.Known{Titles: []docstruct.Title{
		{Title: "中华人民共和国劳动法", Aliases: []string{"劳动法"}},
		{Title: "中华人民共和国劳动合同法", Aliases: []string{"劳动合同法", "合同法"}},
		{Title: "United States Constitution", Aliases: []string{"us-constitution", "Constitution"}},
		{Title: "Articles of Confederation"},
		{Title: "论语", Aliases: []string{"lunyu"}},
	}, Kinds: []string{"条", "章", "篇", "article", "section", "amendment"}}}
	for _, tt := range []struct {
		name    string
		history []string
		q       string
		want    string
	}{
		{"another article", []string{"劳动法第三条是什么？", "第三条 劳动者享有平等就业的权利。"}, "那第四条呢？", "劳动法第四条是什么？"},
		{"digits", []string{"劳动法第3条规定了什么？", "劳动者享有平等就业的权利。"}, "第5条呢？", "劳动法第5条规定了什么？"},
		{"the next", []string{"劳动法第三条是什么？", "第三条 劳动者享有平等就业的权利。"}, "下一条呢？", "劳动法第四条是什么？"},
		{"the previous chapter", []string{"劳动法第三章讲什么？", "第三章 劳动合同。"}, "上一章", "劳动法第二章讲什么？"},
		{"the next twice", []string{"劳动法第三条是什么？", "第三条 …", "下一条呢？", "第四条 …"}, "下一条呢？",
			"劳动法第五条是什么？"},
		{"another document keeps the part", []string{"劳动法第三条是什么？", "第三条 劳动者享有平等就业的权利。"}, "劳动合同法呢？",
			"劳动合同法第三条是什么？"},
		{"another document in 《》", []string{"劳动法第三条是什么？", "第三条 …"}, "那《劳动合同法》呢？", "《劳动合同法》第三条是什么？"},
		{"a nested part", []string{"论语学而篇第二章是什么？", "1.2 有子曰…"}, "下一章呢？", "论语学而篇第三章是什么？"},
		{"a dotted number", []string{"《论语》1.3是什么？", "1.3 子曰：巧言令色，鲜矣仁！"}, "下一章呢？", "《论语》1.4是什么？"},
		{"a part after a topic change", []string{"劳动法第三条是什么？", "第三条 …", "什么是劳动合同？", "劳动合同是…"}, "那第四条呢？",
			"劳动法第四条是什么？"},
		{"a section of the same article", []string{"What does Article I, Section 8 say?", "The Congress shall have Power …"},
			"What about Section 9?", "What does Article I, Section 9 say?"},
		{"the next one", []string{"What does Amendment 24 say?", "The right of citizens …"}, "and the next one?",
			"What does Amendment 25 say?"},
		{"the next amendment in Roman numerals", []string{"What is Amendment IV?", "The right of the people …"}, "And the next amendment?",
			"What is Amendment V?"},
		{"an ordinal word", []string{"What does the Fourteenth Amendment say?", "All persons born …"}, "And the next one?",
			"What does the Fifteenth Amendment say?"},
		{"the previous article", []string{"What does Article III of the Constitution say?", "The judicial Power …"},
			"What about the previous article?", "What does Article II of the Constitution say?"},
		{"another document in English", []string{"What does Article I of the Constitution say?", "All legislative Powers …"},
			"And in the Articles of Confederation?", "What does Article I of the Articles of Confederation say?"},
		{"a question naming its part stands alone", []string{"劳动法第三条是什么？", "第三条 …"}, "劳动合同法第十条是什么？",
			"劳动合同法第十条是什么？"},
		// A follow-up that says nothing besides the part, or only what the
		// earlier question said, is that question asked of the part.
		{"another numbered question", []string{"My sister Anna is moving to Berlin in March, what should she pack? (question 12)",
			"Warm clothes."}, "and question 13?", "My sister Anna is moving to Berlin in March, what should she pack? (question 13)"},
		{"another chapter after a labelled question", []string{"我妹妹三月要搬到柏林，她应该带什么？（第12章）", "厚衣服。"}, "那第13章呢？",
			"我妹妹三月要搬到柏林，她应该带什么？（第13章）"},
		{"another chapter of a book", []string{"What happens in Chapter 11 of Walden?", "Thoreau writes of higher laws."},
			"What about Chapter 13?", "What happens in Chapter 13 of Walden?"},
		{"the earlier question's words again", []string{"What happens in Chapter 11 of Walden?", "Thoreau writes of higher laws."},
			"What happens in Chapter 13?", "What happens in Chapter 13 of Walden?"},
		{"the next chapter of a book", []string{"What happens in Chapter 11 of Walden?", "Thoreau writes of higher laws."},
			"And the next chapter?", "What happens in Chapter 12 of Walden?"},
		{"thanks, and another chapter", []string{"What happens in Chapter 11 of Walden?", "Thoreau writes of higher laws."},
			"Thanks! What about Chapter 13?", "What happens in Chapter 13 of Walden?"},
		{"thanks, and another chapter, in Chinese", []string{"我妹妹三月要搬到柏林，她应该带什么？（第12章）", "厚衣服。"}, "谢谢！那第13章呢？",
			"我妹妹三月要搬到柏林，她应该带什么？（第13章）"},
		// A follow-up that asks something of its own is not the earlier
		// question asked of another part.
		{"something of its own in a part", []string{"What happens in Chapter 11 of Walden?", "Thoreau writes of higher laws."},
			"What about the pond in Chapter 13?", "What about the pond in Chapter 13?"},
		{"a question of its own with a chapter label", []string{"我妹妹三月要搬到柏林，她应该带什么？（第12章）", "厚衣服。"},
			"我在学做川菜，应该先买哪些香料？（第13章）", "我在学做川菜，应该先买哪些香料？（第13章）"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, laws); got != tt.want {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want %q", tt.name, tt.q, got, tt.want)
		}
	}
}

// TestRewriteKeepsAQuestionOfItsOwn: a question complete in itself that
// ends with a numbered label like the earlier question's ("(question 13)"
// after "(question 12)", "（第13题）" after "（第12题）") is the user's own
// question: it is not replaced by the earlier one with the number changed,
// whatever else the rewrite adds to it; a follow-up that says nothing but
// the label is still completed.
func TestRewriteKeepsAQuestionOfItsOwn(t *testing.T) {
	exam := &extractive.Catalog{Known: docstruct.Known{Kinds: []string{"题", "question"}}}
	for _, tt := range []struct {
		name    string
		vocab   extractive.Vocabulary
		history []string
		q       string
		keep    string // what the rewrite keeps of q
	}{
		{"English", nil, []string{"My sister Anna is moving to Berlin in March, what should she pack? (question 12)", "Warm clothes."},
			"I am learning to cook Sichuan food, which spices should I buy first? (question 13)",
			"I am learning to cook Sichuan food, which spices should I buy first? (question 13"},
		{"English with a chapter", nil, []string{"My sister Anna is moving to Berlin in March, what should she pack? (Chapter 12)", "Warm clothes."},
			"I am learning to cook Sichuan food, which spices should I buy first? (Chapter 13)",
			"I am learning to cook Sichuan food, which spices should I buy first? (Chapter 13"},
		{"English, numbered by the documents", exam, []string{"My sister Anna is moving to Berlin in March, what should she pack? (question 12)", "Warm clothes."},
			"I am learning to cook Sichuan food, which spices should I buy first? (question 13)",
			"I am learning to cook Sichuan food, which spices should I buy first? (question 13"},
		{"Chinese", exam, []string{"我妹妹安娜三月要搬到柏林，她应该带什么？（第12题）", "厚衣服。"},
			"我在学做川菜，应该先买哪些香料？（第13题）", "我在学做川菜，应该先买哪些香料？（第13题）"},
		{"Chinese with a chapter", nil, []string{"我妹妹安娜三月要搬到柏林，她应该带什么？（第12章）", "厚衣服。"},
			"我在学做川菜，应该先买哪些香料？（第13章）", "我在学做川菜，应该先买哪些香料？（第13章）"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, tt.vocab); !strings.Contains(got, tt.keep) {
			t.Errorf("%s: RewriteFollowUp(%q) = %q, want it to keep %q", tt.name, tt.q, got, tt.keep)
		}
	}
	// The same follow-ups, saying nothing but the label, are completed.
	for _, tt := range []struct {
		history []string
		q, want string
	}{
		{[]string{"My sister Anna is moving to Berlin in March, what should she pack? (question 12)", "Warm clothes."}, "and question 13?",
			"My sister Anna is moving to Berlin in March, what should she pack? (question 13)"},
		{[]string{"我妹妹安娜三月要搬到柏林，她应该带什么？（第12题）", "厚衣服。"}, "那第13题呢？", "我妹妹安娜三月要搬到柏林，她应该带什么？（第13题）"},
	} {
		f := memory.FollowUp{History: msgs(tt.history...), Question: tt.q}
		if got := extractive.RewriteFollowUp(f, exam); got != tt.want {
			t.Errorf("RewriteFollowUp(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

// BenchmarkRewriteLabelled rewrites, with the "always" policy, a question
// of its own ending with a numbered label after one that ends the same
// way (a label of a kind of part and, to compare, one of none), an
// elliptical follow-up of the label alone, and one that asks about
// something in another chapter.
func BenchmarkRewriteLabelled(b *testing.B) {
	for _, bb := range []struct {
		name, prev, q string
	}{
		{"own question", "My sister Anna is moving to Berlin in March, what should she pack? (question 12)",
			"I am learning to cook Sichuan food, which spices should I buy first? (question 13)"},
		{"own question, a label of no kind", "My sister Anna is moving to Berlin in March, what should she pack? (item 12)",
			"I am learning to cook Sichuan food, which spices should I buy first? (item 13)"},
		{"label alone", "My sister Anna is moving to Berlin in March, what should she pack? (question 12)", "and question 13?"},
		{"elliptical", "What happens in Chapter 11 of Walden?", "What about the pond in Chapter 13?"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			r := extractive.NewRewriter(nil, nil)
			f := memory.FollowUp{History: msgs(bb.prev, "Warm clothes."), Question: bb.q, Always: true,
				Recent: []memory.Line{{Role: llm.RoleUser, Text: bb.prev}, {Role: llm.RoleAssistant, Text: "Warm clothes."}}}
			for i := 0; i < b.N; i++ {
				if _, err := r.Rewrite(context.Background(), f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
