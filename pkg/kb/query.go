package kb

import (
	"strings"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// questionWords are the scaffolding of Chinese questions ("…是什么？",
// "请问…", "…吗"): they carry no content, and documents, classical texts
// above all, rarely contain them, so as query terms they only dilute the
// match. Longer forms come first so they are removed whole.
var questionWords = []string{
	"是什么意思", "什么意思", "为什么", "是什么", "什么是", "怎么样", "怎么办", "是多少", "有哪些", "是哪个", "是哪一",
	"请问", "请教", "什么", "怎么", "怎样", "如何", "哪些", "哪个", "哪一", "哪里", "哪儿", "多少", "一下", "介绍",
	"吗", "呢", "吧", "啊", "呀", "的",
}

var questionReplacer = func() *strings.Replacer {
	pairs := make([]string, 0, 2*len(questionWords))
	for _, w := range questionWords {
		pairs = append(pairs, w, " ")
	}
	return strings.NewReplacer(pairs...)
}()

// stripQuestion removes question scaffolding from a query, leaving a space
// where it was (so no new character pair is made across it). A query that
// is nothing but scaffolding is kept as it is.
func stripQuestion(q string) string {
	out := questionReplacer.Replace(q)
	if strings.TrimSpace(strings.Trim(out, " ？?！!。，,")) == "" {
		return q
	}
	return out
}

// headingWeight is what an occurrence of a question term in a chunk's
// heading (its title field) counts against one in its body: the field
// weight of BM25F. Headings are short and name what follows, so a word of
// the question in the heading says more than one in the text.
const headingWeight = 2

// lexicalQuery is the BM25 query of a question and its information (see
// lexicalFullMatch): one clause per distinct term of the question's body
// (question words removed), found in a chunk's body or in its heading, the
// two counted together as in BM25F (retrieve.Clause).
//
// The heading is matched at the granularity of the question's terms, not
// character by character: a question's CJK bigram is found in the heading
// as that bigram or the reverse one (the heading "第一卦乾" names the
// hexagram "乾卦"), or, with a body occurrence's weight, as its two
// characters anywhere in the heading; a word, or a question term that is a
// lone character, as that title term. Each clause scores at most its
// term's share of the information whichever field holds it, so a heading
// counts in proportion to how much of the question it covers: one shared
// word or character does not make an unrelated question a full match.
func lexicalQuery(lex *retrieve.BM25, q string) ([]retrieve.Clause, float64) {
	body := lexTerms(stripQuestion(q))
	idf := termIDF(lex)
	qtf := map[string]int{}
	var order []string
	for _, t := range body {
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	clauses := make([]retrieve.Clause, 0, len(order))
	var info float64
	for _, t := range order {
		w := idf(t)
		info += float64(qtf[t]) * w
		clauses = append(clauses, retrieve.Clause{Count: qtf[t], IDF: w, Forms: append([]retrieve.Form{{Terms: []string{t}, Weight: 1}}, headingForms(t)...)})
	}
	return clauses, info
}

// headingForms are the forms of a question term in the title field (see
// titleTerms and lexicalQuery).
func headingForms(t string) []retrieve.Form {
	if rs := []rune(t); len(rs) == 2 && text.IsCJK(rs[0]) && text.IsCJK(rs[1]) {
		a, b := string(rs[0]), string(rs[1])
		fs := []retrieve.Form{
			{Terms: []string{titleMark + t}, Weight: headingWeight},
			{Terms: []string{titleMark + a, titleMark + b}, Weight: 1},
		}
		if a != b {
			fs = append(fs, retrieve.Form{Terms: []string{titleMark + b + a}, Weight: headingWeight})
		}
		return fs
	}
	return []retrieve.Form{{Terms: []string{titleMark + t}, Weight: headingWeight}}
}
