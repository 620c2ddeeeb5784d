package kb

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file is how a question becomes a retrieval query: which of its
// terms are sought (stripQuestion, lexicalQuery) and which parts of a
// knowledge base it names (questionScopes, applyScopes). It is retrieval
// behaviour, the same whatever model answers: it decides which chunks are
// found and in what order, never what the model is asked: the prompt
// carries the question as the answerer was given it.

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
// where it was (so no new character pair is made across it), and English
// possessives' 's (text.DropPossessives). A query that
// is nothing but scaffolding is kept as it is. The result is what the
// embedder and BM25 see; the model sees the question whole.
func stripQuestion(q string) string {
	q = text.DropPossessives(q) // "Sala Thong's beer": the name's own terms
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
// as that bigram or the reverse one (the heading "第三章总则" names the
// "总则章" a question asks for), or, with a body occurrence's weight, as its
// two characters anywhere in the heading; a word, or a question term that
// is a lone character, as that title term. Each clause scores at most its
// term's share of the information whichever field holds it, so a heading
// counts in proportion to how much of the question it covers: one shared
// word or character does not make an unrelated question a full match.
// names are the profile's names (queryNames): a one-character name before
// one of its classifiers is a term of its own.
func lexicalQuery(lex *retrieve.BM25, q string, names queryNames) ([]retrieve.Clause, float64) {
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
	free := unquotedTerms(q)
	named := map[string]bool{}
	order = names.appendNames(order, qtf, named, stripQuestion(q))
	clauses := make([]retrieve.Clause, 0, len(order))
	var info float64
	for _, t := range order {
		w := idf(t)
		info += float64(qtf[t]) * w
		// A lone character left between question words ("…哪里人？") is
		// sought in the text only: one character of a heading (家人) says
		// little. A name before a classifier is sought in headings too.
		heading := utf8.RuneCountInString(t) > 1 || named[t]
		forms := termForms(lex, t, w, idf, heading, !named[t] && free[t])
		clauses = append(clauses, retrieve.Clause{Count: qtf[t], IDF: w, Forms: forms})
	}
	return clauses, info
}

// queryNames is what a knowledge base's profile (docstruct.Profile) adds to
// the reading of a question: its classifiers, characters that follow a
// name and say what kind of part it names (with the classifier 篇, "学而篇"
// names the part 学而), and where its heading and file-name forms write a
// name (the text just before NAME in "第N篇NAME" or "注释-NAME"). Without
// a profile there are none: names before classifiers are read by the
// structure index (docstruct), not here.
type queryNames struct {
	classifiers string
	// before are the texts the forms write just before a part's name
	// ("篇" in "第N篇NAME", "注释-" in "注释-NAME").
	before []string
}

// namesOf is the queryNames of the profiles in force (several when a search
// spans knowledge bases of several profiles).
func namesOf(ps ...*docstruct.Profile) queryNames {
	var n queryNames
	seen := map[string]bool{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		for _, c := range p.Classifiers {
			if !strings.Contains(n.classifiers, c) {
				n.classifiers += c
			}
		}
		for _, f := range append(slices.Clone(p.HeadingForms), p.FileNameForms...) {
			i := strings.Index(f, "NAME")
			if i <= 0 {
				continue
			}
			pre := f[:i]
			if j := strings.LastIndex(pre, "N"); j >= 0 {
				pre = pre[j+1:]
			}
			if pre = text.Fold(pre); pre != "" && !seen[pre] {
				seen[pre] = true
				n.before = append(n.before, pre)
			}
		}
	}
	return n
}

func (n queryNames) isClassifier(r rune) bool {
	return n.classifiers != "" && strings.ContainsRune(n.classifiers, r)
}

// appendNames adds to order (and qtf, names) the one-character names of q: the
// CJK character before a classifier (a two-character name is a bigram term
// already). As a term it matches the character standing alone in a
// chunk's text ("《X》": text.Terms makes a lone CJK character a term) or
// in its heading.
func (n queryNames) appendNames(order []string, qtf map[string]int, names map[string]bool, q string) []string {
	if n.classifiers == "" {
		return order
	}
	rs := []rune(text.Fold(q))
	for i := 0; i+1 < len(rs); i++ {
		if !text.IsCJK(rs[i]) || !n.isClassifier(rs[i+1]) || n.isClassifier(rs[i]) {
			continue
		}
		t := string(rs[i])
		names[t] = true
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	return order
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

// bookTitle is a title in book marks: 《论语》.
var bookTitle = regexp.MustCompile(`《([^《》]{1,30})》`)

// questionScopes are the parts of the knowledge base a question names:
// a title in book marks (《X传》, also without a final 传 or 经, as
// headings often write it) and, with a profile, names before one of its
// classifiers, as its heading and file-name forms write them (with the
// form "第N篇NAME", "学而篇" is in scope in the section headed "…篇学而…").
// Each is a folded string a chunk's section path contains when the chunk
// is in scope.
func questionScopes(q string, names queryNames) []string {
	fq := text.Fold(q)
	var out []string
	for _, m := range bookTitle.FindAllStringSubmatch(fq, -1) {
		t := strings.TrimSpace(m[1])
		out = append(out, t)
		if s := strings.TrimRight(t, "传经"); s != t && utf8.RuneCountInString(s) >= 2 {
			out = append(out, s)
		}
	}
	if names.classifiers == "" || len(names.before) == 0 {
		return out
	}
	rs := []rune(stripQuestion(fq))
	for i := range rs {
		if !names.isClassifier(rs[i]) {
			continue
		}
		for n := 1; n <= 2 && i-n >= 0; n++ {
			name := rs[i-n : i]
			if !names.allName(name) {
				continue
			}
			for _, pre := range names.before {
				out = append(out, pre+string(name))
			}
		}
	}
	return out
}

// allName reports whether rs are CJK characters none of which is a
// classifier.
func (n queryNames) allName(rs []rune) bool {
	for _, r := range rs {
		if !text.IsCJK(r) || n.isClassifier(r) {
			return false
		}
	}
	return len(rs) > 0
}

// outOfScope is the factor on the relevance of a chunk outside the parts
// a question names, when some chunk found is inside them.
const outOfScope = 0.75

// applyScopes lowers the relevance of results outside the question's
// scopes (see questionScopes) when any result is inside, and re-sorts: a
// question that names a book or a section prefers the chunks under it.
// Like the rest of retrieval it runs for every model and changes what is
// found, not the question.
func applyScopes(q string, rs []Result, names queryNames) {
	scopes := questionScopes(q, names)
	if len(scopes) == 0 || len(rs) == 0 {
		return
	}
	in := make([]bool, len(rs))
	any := false
	for i, r := range rs {
		p := strings.ReplaceAll(text.Fold(titleOf(r.File, r.Metadata)), " ", "") // "第一篇 学而" names 学而 too
		for _, s := range scopes {
			if strings.Contains(p, s) {
				in[i], any = true, true
				break
			}
		}
	}
	if !any {
		return
	}
	for i := range rs {
		if !in[i] {
			rs[i].Relevance *= outOfScope
		}
	}
	sortResults(rs)
}

// termForms are the forms a question term t of weight w is sought in: t
// itself; its heading forms when heading is set; t as the index holds it
// with a possessive; and, when related is set, its related words (idf
// weighs them).
func termForms(lex *retrieve.BM25, t string, w float64, idf func(string) float64, heading, related bool) []retrieve.Form {
	forms := []retrieve.Form{{Terms: []string{t}, Weight: 1}}
	if heading {
		forms = append(forms, headingForms(t)...)
	}
	forms = append(forms, possessiveForms(lex, t)...)
	if related {
		forms = append(forms, relatedForms(lex, t, w, idf)...)
	}
	return forms
}

// relatedWeight is what an occurrence of a word related to a question's
// word (text.Related: "silent" for "quiet") counts for, against 1 for the
// word itself: the passage says the thing asked in other words, or
// something near it.
const relatedWeight = 0.55

// relatedMinIDF is the least share of the question word's weight a related
// word must have to stand for it: a related word commoner in the base than
// the one asked ("great" for "large") says little about the thing asked.
// At 1 the expansion leaves SciFact as it was (mixchat-eval beir --related:
// nDCG@10 0.6868 against 0.6869; 0.6789 at 0.3, weight 0.7).
const relatedMinIDF = 1

// relatedForms are the forms of a question term's related words (see
// relatedWeight), each counted in the term's own clause, whose score
// saturates and is bounded by the term's weight: the question's
// information, the most a chunk can score, stays what it was. w is the term's weight, idf weighs
// the related words. A term some heading of the base holds names parts
// ("Which section says …", "the reviews"): it is sought as it is.
func relatedForms(lex *retrieve.BM25, t string, w float64, idf func(string) float64) []retrieve.Form {
	if lex.DocFreq(titleMark+t) > 0 {
		return nil
	}
	var out []retrieve.Form
	for _, r := range text.Related(t) {
		if idf(r) >= relatedMinIDF*w {
			out = append(out, retrieve.Form{Terms: []string{r}, Weight: relatedWeight})
		}
	}
	return out
}

// unquotedTerms are the terms of question q outside the passages it
// quotes: a quoted passage is sought as it is written, never in related
// words.
func unquotedTerms(q string) map[string]bool {
	m := map[string]bool{}
	for _, t := range lexTerms(text.Unquoted(stripQuestion(q))) {
		m[t] = true
	}
	return m
}

// possessiveForms are the forms of a question term (its possessive dropped
// by stripQuestion) as the index holds it with one ("rosa's" of "Rosa's
// Bed and Breakfast"), in the text and in headings, when it does.
func possessiveForms(lex *retrieve.BM25, t string) []retrieve.Form {
	if t == "" || t[0] >= 0x80 {
		return nil
	}
	var out []retrieve.Form
	p := t + "'s"
	if lex.DocFreq(p) > 0 {
		out = append(out, retrieve.Form{Terms: []string{p}, Weight: 1})
	}
	if lex.DocFreq(titleMark+p) > 0 {
		out = append(out, retrieve.Form{Terms: []string{titleMark + p}, Weight: headingWeight})
	}
	return out
}
