package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/internal/evalqa"
)

// Kinds of structure question.
const (
	stLookup       = "lookup"        // a part by its label: "What does Article 1 say?", "论语第三篇是什么？"
	stNested       = "nested"        // a part within its parent: "Article I, Section 8", "学而篇第三章"
	stAbsent       = "absent"        // a number beyond the last: "Article VIII", "第二十一篇"
	stAbsentNested = "absent_nested" // a nested part that does not exist: "Article I, Section 11"
	stNext         = "followup_next" // turn 2 "And the next section?" / "下一章呢？"
	stOtherDoc     = "followup_doc"  // turn 2 the same part of another document
	stWhereFrom    = "wherefrom"     // "「…」出自哪里？" / "Which section says "…"?"
)

// stKinds are the kinds in the order the table lists them.
var stKinds = []string{stLookup, stNested, stAbsent, stAbsentNested, stNext, stOtherDoc, stWhereFrom}

// stQuestion is one question (two turns for the follow-ups).
type stQuestion struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Form  string `json:"form"` // digits, roman, chinese, ordinal, dotted, name
	Doc   string `json:"doc"`
	Turn1 string `json:"turn1,omitempty"`
	Text  string `json:"question"`
	// Part is the addressed part's label path ("Article I > Section 8");
	// Key its first 12 characters of text (evalqa.Normalize), "" for an
	// absent part.
	Part string `json:"part"`
	Key  string `json:"key,omitempty"`
	// Labels are the ways a reply may name the part, and Passage the
	// text quoted (where-from).
	Labels  []string `json:"labels,omitempty"`
	Passage string   `json:"passage,omitempty"`
	// Wrong are the keys a reply to an absent question must not hold:
	// every part of that number in the corpus and the addressed parent's
	// parts.
	Wrong []string `json:"-"`
}

// kindWord is how a question names a part's kind: the label's own word,
// or for unlabelled numbers the word its parent's kind is divided into.
func kindWord(d stDoc, p stPart) string {
	switch p.Kind {
	case "dotted", "list", "enum", "":
		parent := ""
		if p.Parent >= 0 {
			parent = d.Parts[p.Parent].Kind
		}
		if d.Lang == "zh" {
			if w, ok := map[string]string{"篇": "章", "卷": "章", "编": "章", "部": "章", "章": "节", "节": "条", "条": "款", "款": "项"}[parent]; ok {
				return w
			}
			return "章"
		}
		if w, ok := map[string]string{"Article": "Section", "Chapter": "Section", "Part": "Chapter", "Title": "Chapter", "Book": "Chapter", "Section": "Paragraph", "Amendment": "Section"}[parent]; ok {
			return w
		}
		return "Section"
	}
	return p.Kind
}

// address is a part's number in a form: "Article 1", "Article I", "the
// First Article", "第一条", "第1条"; ok is false when the form does not
// apply.
func address(d stDoc, p stPart, n int, form string) (string, bool) {
	k := kindWord(d, p)
	if d.Lang == "zh" {
		switch form {
		case "chinese":
			return "第" + chinese(n) + k, true
		case "digits":
			return "第" + strconv.Itoa(n) + k, true
		}
		return "", false
	}
	switch form {
	case "digits":
		return k + " " + strconv.Itoa(n), true
	case "roman":
		return k + " " + roman(n), true
	case "ordinal":
		if o := ordinal(n); o != "" {
			return "the " + o + " " + k, true
		}
	}
	return "", false
}

// stForms are the number forms asked of a document's language.
func stForms(lang string) []string {
	if lang == "zh" {
		return []string{"chinese", "digits"}
	}
	return []string{"digits", "roman", "ordinal"}
}

// stAsk words a lookup of what (an address, a name) in the document's
// language; title names the document when the corpus needs it.
func stAsk(d stDoc, what string, title bool) string {
	if d.Lang == "zh" {
		t := ""
		if title {
			t = d.Title
		}
		return t + what + "是什么？"
	}
	q := "What does " + what
	if title {
		q += " of the " + d.Title
	}
	return q + " say?"
}

// stBuild builds the questions of a corpus: for every labelled part whose
// kind and number are unique in its document, lookups in every number form
// of its language (and by name and dotted label where it has one); parts
// numbered within their parent, asked with the parent's address; a number
// beyond the last of each kind, and beyond the last child of a parent;
// the next part as a second turn; the same part of another document as a
// second turn; and a passage of each part, asked where it comes from.
func stBuild(docs []stDoc) []stQuestion {
	var qs []stQuestion
	// byNum: every part's key by its number, for absent questions.
	byNum := map[int][]string{}
	// kindNums: which documents have a part of a kind and number, for the
	// other document's same part and for naming the title.
	type kn struct {
		kind string
		num  int
	}
	holders := map[kn][]int{}
	for di, d := range docs {
		for _, p := range d.Parts {
			if p.Num > 0 && p.Key != "" {
				byNum[p.Num] = append(byNum[p.Num], p.Key)
			}
		}
		seen := map[kn]bool{}
		for _, p := range d.Parts {
			k := kn{kindWord(d, p), p.Num}
			if p.Num > 0 && !seen[k] {
				seen[k] = true
				holders[k] = append(holders[k], di)
			}
		}
	}
	for di, d := range docs {
		children := d.children()
		count := map[kn]int{}
		for _, p := range d.Parts {
			if p.Num > 0 {
				count[kn{kindWord(d, p), p.Num}]++
			}
		}
		// A kind is numbered through the document when no number of it
		// repeats (Article, Amendment, 条); otherwise (Section 1 of every
		// Article) its parts are asked within their parent.
		through := map[string]bool{}
		for _, p := range d.Parts {
			if labelled(p) {
				if _, ok := through[p.Kind]; !ok {
					through[p.Kind] = true
				}
				if count[kn{kindWord(d, p), p.Num}] > 1 {
					through[p.Kind] = false
				}
			}
		}
		zh := d.Lang == "zh"
		id := func(kind string, i int, form string) string {
			return fmt.Sprintf("%s#%d-%s-%s", d.File, i, kind, form)
		}
		// Titles: always in Chinese questions (论语学而篇第三章); in English
		// when another document has the same part.
		named := func(p stPart) bool {
			return zh || len(holders[kn{kindWord(d, p), p.Num}]) > 1
		}
		lookup := func(i int, p stPart) (first string) {
			for _, f := range stForms(d.Lang) {
				if !labelled(p) {
					break
				}
				a, ok := address(d, p, p.Num, f)
				if !ok {
					continue
				}
				q := stQuestion{ID: id(stLookup, i, f), Kind: stLookup, Form: f, Doc: d.File, Text: stAsk(d, a, named(p)),
					Part: d.path(i), Key: p.Key}
				if !zh && f == "roman" {
					q.Text = "What is " + a
					if named(p) {
						q.Text += " of the " + d.Title
					}
					q.Text += "?"
				}
				if first == "" {
					first = q.Text
				}
				qs = append(qs, q)
			}
			if p.Form == "dotted" {
				t := p.Written
				if zh {
					t = "《" + d.Title + "》" + t + "是什么？"
				} else {
					t = "What does " + t + " of the " + d.Title + " say?"
				}
				qs = append(qs, stQuestion{ID: id(stLookup, i, "dotted"), Kind: stLookup, Form: "dotted", Doc: d.File, Text: t,
					Part: d.path(i), Key: p.Key})
			}
			if p.nameForm && zh {
				qs = append(qs, stQuestion{ID: id(stLookup, i, "name"), Kind: stLookup, Form: "name", Doc: d.File,
					Text: stAsk(d, p.Name+p.Kind, true), Part: d.path(i), Key: p.Key})
			}
			return first
		}
		nested := func(i int, p stPart) (first string) {
			parent := d.Parts[p.Parent]
			for _, f := range stForms(d.Lang) {
				if f == "ordinal" {
					continue
				}
				// English: the parent in this form, the child as written
				// (Article I, Section 8 / Article 1, Section 8); Chinese:
				// the parent by name where it has one, the child in this
				// form (学而篇第三章 / 学而篇第3章).
				pa, ok1 := address(d, parent, parent.Num, f)
				cf := p.Form
				if zh {
					cf = f
					if parent.nameForm {
						pa, ok1 = parent.Name+parent.Kind, true
					}
				} else if cf != "roman" {
					cf = "digits"
				}
				ca, ok2 := address(d, p, p.Num, cf)
				if !ok1 || !ok2 {
					continue
				}
				t := stAsk(d, pa+", "+ca, named(parent))
				if zh {
					t = stAsk(d, pa+ca, true)
				}
				if first == "" {
					first = t
				}
				qs = append(qs, stQuestion{ID: id(stNested, i, f), Kind: stNested, Form: f, Doc: d.File, Text: t,
					Part: d.path(i), Key: p.Key})
			}
			return first
		}
		// asked: the first wording of each part asked, for follow-ups.
		asked := map[int]string{}
		for i, p := range d.Parts {
			if p.Num <= 0 || p.Key == "" {
				continue
			}
			unique := labelled(p) && through[p.Kind]
			switch {
			case unique:
				asked[i] = lookup(i, p)
			case p.Parent >= 0 && d.Parts[p.Parent].Num > 0 && p.Kind != "list" && p.Kind != "enum":
				asked[i] = nested(i, p)
			}
			if p.Form == "dotted" {
				lookup(i, p)
			}
		}
		// Absent: one beyond the last number of each kind asked alone, and
		// one beyond the last child of each parent.
		last := map[string]int{}
		lastAt := map[string]int{}
		for i, p := range d.Parts {
			if _, ok := asked[i]; ok && labelled(p) && through[p.Kind] && p.Num > last[kindWord(d, p)] {
				last[kindWord(d, p)], lastAt[kindWord(d, p)] = p.Num, i
			}
		}
		for k, n := range last {
			p := d.Parts[lastAt[k]]
			for _, f := range stForms(d.Lang) {
				if a, ok := address(d, p, n+1, f); ok {
					t := stAsk(d, a, named(p))
					if !zh && f == "roman" {
						t = "What is " + a + "?"
					}
					qs = append(qs, stQuestion{ID: fmt.Sprintf("%s#%s-%d-%s-%s", d.File, k, n+1, stAbsent, f), Kind: stAbsent, Form: f,
						Doc: d.File, Text: t, Part: a, Wrong: byNum[n+1]})
				}
			}
		}
		for i, p := range d.Parts {
			kids := children[i]
			if p.Num <= 0 || len(kids) == 0 {
				continue
			}
			maxKid, at := 0, -1
			for _, c := range kids {
				if d.Parts[c].Num > maxKid && d.Parts[c].Kind != "list" && d.Parts[c].Kind != "enum" {
					maxKid, at = d.Parts[c].Num, c
				}
			}
			if at < 0 || labelled(d.Parts[at]) && through[d.Parts[at].Kind] {
				continue // children numbered through the document: the absent lookup asks beyond them
			}
			var wrong []string
			for _, c := range kids {
				wrong = append(wrong, d.Parts[c].Key)
			}
			wrong = append(wrong, byNum[maxKid+1]...)
			ghost := d.Parts[at]
			ghost.Num = maxKid + 1
			for _, f := range stForms(d.Lang) {
				if f == "ordinal" {
					continue
				}
				pa, ok1 := address(d, p, p.Num, f)
				cf := ghost.Form
				if zh {
					cf = f
					if p.nameForm {
						pa, ok1 = p.Name+p.Kind, true
					}
				} else if cf != "roman" {
					cf = "digits"
				}
				ca, ok2 := address(d, ghost, ghost.Num, cf)
				if !ok1 || !ok2 {
					continue
				}
				t := stAsk(d, pa+", "+ca, named(p))
				if zh {
					t = stAsk(d, pa+ca, true)
				}
				qs = append(qs, stQuestion{ID: fmt.Sprintf("%s#%d-%d-%s-%s", d.File, i, ghost.Num, stAbsentNested, f), Kind: stAbsentNested,
					Form: f, Doc: d.File, Text: t, Part: d.path(i) + " > " + ca, Wrong: wrong})
			}
		}
		// Follow-ups: the next part of the same style, and the same part of
		// another document.
		for i, p := range d.Parts {
			turn1, ok := asked[i]
			if !ok {
				continue
			}
			for j := i + 1; j < len(d.Parts); j++ {
				n := d.Parts[j]
				if n.style != p.style {
					continue
				}
				if n.Key == "" || n.Num != p.Num+1 {
					break
				}
				t := "And the next " + strings.ToLower(kindWord(d, n)) + "?"
				if zh {
					t = "下一" + kindWord(d, n) + "呢？"
				}
				qs = append(qs, stQuestion{ID: id(stNext, i, p.Form), Kind: stNext, Form: formOf(turn1, d.Lang), Doc: d.File,
					Turn1: turn1, Text: t, Part: d.path(j), Key: n.Key})
				break
			}
			for _, dj := range holders[kn{kindWord(d, p), p.Num}] {
				if dj == di || docs[dj].Lang != d.Lang || !labelled(p) {
					continue
				}
				o := docs[dj]
				for oi, op := range o.Parts {
					if op.Num != p.Num || op.Kind != p.Kind || !labelled(op) || op.Key == "" {
						continue
					}
					t := "And in the " + o.Title + "?"
					if zh {
						t = "那《" + o.Title + "》呢？"
					}
					qs = append(qs, stQuestion{ID: id(stOtherDoc, i, o.File), Kind: stOtherDoc, Form: formOf(turn1, d.Lang), Doc: o.File,
						Turn1: turn1, Text: t, Part: o.path(oi), Key: op.Key})
					break
				}
				break
			}
		}
		// Where from: a passage of each leaf part with a number.
		for i, p := range d.Parts {
			if len(children[i]) > 0 || p.Key == "" {
				continue
			}
			path := d.numbered(i)
			if path < 0 {
				continue
			}
			passage := pickPassage(p, zh)
			if passage == "" || countIn(docs, passage) != 1 {
				continue
			}
			t := "Which section says \"" + passage + "\"?"
			if zh {
				t = "「" + passage + "」出自哪里？"
			}
			labels := d.labels(path)
			if pp := d.Parts[path]; pp.Form != "dotted" && !(labelled(pp) && through[pp.Kind]) && pp.Parent >= 0 {
				// Section 1 is every article's: the reply must name both.
				var both []string
				for _, a := range d.labels(pp.Parent) {
					for _, b := range labels {
						both = append(both, a+" "+b)
					}
				}
				labels = both
			}
			qs = append(qs, stQuestion{ID: id(stWhereFrom, i, "text"), Kind: stWhereFrom, Form: "passage", Doc: d.File, Text: t,
				Part: d.path(i), Key: p.Key, Labels: labels, Passage: passage})
		}
	}
	return qs
}

// labelled reports whether a part's label names its kind (Article,
// 条, 篇…): a number alone (1.3, "1.", "一、") counts within its parent.
func labelled(p stPart) bool {
	switch p.Kind {
	case "", "dotted", "list", "enum":
		return false
	}
	return true
}

// formOf is the number form of a question as worded (for follow-ups,
// whose number comes from turn 1).
func formOf(q, lang string) string {
	switch {
	case lang == "zh" && strings.ContainsAny(q, "0123456789"):
		return "digits"
	case lang == "zh":
		return "chinese"
	case strings.Contains(q, "the ") && !strings.Contains(q, " of the "):
		return "ordinal"
	case strings.ContainsAny(q, "0123456789"):
		return "digits"
	}
	return "roman"
}

// path is a part's label path: "Article I > Section 8", "学而篇第一 > 1.3".
func (d stDoc) path(i int) string {
	var segs []string
	for ; i >= 0; i = d.Parts[i].Parent {
		p := d.Parts[i]
		s := p.Written
		if s == "" {
			s = p.Name
		}
		if s != "" {
			segs = append([]string{s}, segs...)
		}
	}
	return strings.Join(segs, " > ")
}

// numbered is the part itself or its nearest ancestor with a number; -1
// when none has one.
func (d stDoc) numbered(i int) int {
	for ; i >= 0; i = d.Parts[i].Parent {
		if d.Parts[i].Num > 0 && d.Parts[i].Kind != "list" && d.Parts[i].Kind != "enum" {
			return i
		}
	}
	return -1
}

// labels are the ways a reply names part i: its label as written and its
// number in every form of the language.
func (d stDoc) labels(i int) []string {
	p := d.Parts[i]
	out := []string{p.Written}
	if p.nameForm {
		out = append(out, p.Name+p.Kind)
	}
	for _, f := range stForms(d.Lang) {
		if a, ok := address(d, p, p.Num, f); ok {
			out = append(out, strings.TrimPrefix(a, "the "))
		}
	}
	return out
}

// pickPassage is a passage of p's own text a person might quote: a clause
// of 6-16 characters (Chinese) or 5-9 words (English) from its middle.
func pickPassage(p stPart, zh bool) string {
	t := strings.Join(p.own, " ")
	if zh {
		var clauses []string
		for _, c := range strings.FieldsFunc(t, func(r rune) bool {
			return strings.ContainsRune("，。；：？！、“”「」『』《》（）() ", r)
		}) {
			if n := utf8.RuneCountInString(c); n >= 6 && n <= 16 {
				clauses = append(clauses, c)
			}
		}
		if len(clauses) == 0 {
			return ""
		}
		return clauses[len(clauses)/2]
	}
	words := strings.Fields(strings.NewReplacer(",", " ", ";", " ", ":", " ", ".", " ", "\"", " ").Replace(t))
	if len(words) < 6 {
		return ""
	}
	n := min(8, len(words))
	at := (len(words) - n) / 2
	return strings.Join(words[at:at+n], " ")
}

// countIn counts the documents' parts whose own text holds passage.
func countIn(docs []stDoc, passage string) int {
	n := 0
	want := evalqa.Normalize(passage)
	for _, d := range docs {
		for _, p := range d.Parts {
			if strings.Contains(evalqa.Normalize(strings.Join(p.own, " ")), want) {
				n++
			}
		}
	}
	return n
}

// Scoring.

// holdsKey reports whether text holds a part's key (after evalqa.Normalize).
func holdsKey(text, key string) bool {
	return key != "" && strings.Contains(evalqa.Normalize(text), key)
}

// absencePhrases are the server's own ways of saying something is not
// there, in Chinese and English: the refusals of the offline model
// (pkg/llm), the knowledge base (pkg/kb nothingFound) and the prompts,
// and the plain words a reply that a part does not exist uses ("X没有第N
// 条", "不存在", "has no Article IX", "does not exist").
var absencePhrases = []string{
	"没有找到", "无法回答", "没有", "不存在", "并无",
	"nothing in the given context", "cannot be answered", "nothing relevant", "no relevant",
	"has no ", "does not have", "does not exist", "doesn't exist", "there is no", "only has", "runs from",
}

// absentSaid reports whether a reply says the part asked for does not
// exist: it holds none of the keys in wrong (no part of that number in the
// corpus, no part of the parent addressed) and it holds an absence phrase.
func absentSaid(reply string, empty bool, wrong []string) bool {
	for _, k := range wrong {
		if holdsKey(reply, k) {
			return false
		}
	}
	if empty {
		return true
	}
	low := strings.ToLower(reply)
	for _, p := range absencePhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// namesPart reports whether a reply names one of a part's labels (compared
// after evalqa.Normalize).
func namesPart(reply string, labels []string) bool {
	n := evalqa.Normalize(reply)
	for _, l := range labels {
		if l := evalqa.Normalize(l); l != "" && strings.Contains(n, l) {
			return true
		}
	}
	return false
}
