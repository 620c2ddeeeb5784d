package extractive

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file is the model's fusion of the answers of several answerers
// (Grounding.Answers), as the mix_chat fusion prompt asks of a generative
// model: a statement the answers share is said once and attributed to
// every source that made it, statements that differ follow in source
// order with the knowledge base first, each attributed (据知识库 /
// 据网络资料; the model's own knowledge unattributed), and refusals are
// left out. A statement is the same whatever its script (traditional and
// simplified Chinese compare folded; the first form is kept), and it keeps
// the citation markers of the sources it rests on: the answers' [n], which
// the Mixer numbers into the turn's sources list before fusion.

// fusionSources maps an answerer's name to its rank (knowledge base first)
// and attribution.
var fusionSources = map[string]struct {
	rank   int
	zh, en string
}{
	"kb":     {0, "知识库", "knowledge base"},
	"search": {1, "网络资料", "web"},
	"llm":    {2, "", ""},
}

type fusedAnswer struct {
	rank    int
	label   string // attribution ("" for none)
	text    string
	refusal bool
}

type fusedPart struct {
	text    string
	cites   []int // citation markers, in the order first given
	labels  []string
	general bool // said by an unattributed source
	// answer and seq place the part where it was first said: the answer's
	// index and the sentence's within it; rank is that answer's source rank
	// (0: the knowledge base).
	answer, seq, rank int
}

// fuse composes g's answers into one reply; nothing is true when the
// reply only says that nothing was found.
func fuse(g llm.Grounding) (reply string, nothing bool) {
	// Attributions and refusals follow the question's language (the
	// prompt's rule: answer in the language of the question), else the
	// answers'.
	zh := fusedInChinese(g)
	var answers []fusedAnswer
	for _, d := range g.Answers {
		src, ok := fusionSources[d.From]
		if !ok {
			src.rank, src.zh, src.en = 3, d.From, d.From
		}
		attr := src.zh
		if !zh {
			attr = src.en
		}
		answers = append(answers, fusedAnswer{rank: src.rank, label: attr, text: strings.TrimSpace(d.Text), refusal: d.Refusal})
	}
	// Knowledge base first, then the web, then the model (stable).
	for i := 1; i < len(answers); i++ {
		for j := i; j > 0 && answers[j].rank < answers[j-1].rank; j-- {
			answers[j], answers[j-1] = answers[j-1], answers[j]
		}
	}
	var parts []fusedPart
	var refusal string
	for ai, a := range answers {
		if a.text == "" || a.refusal || isRefusalText(a.text) {
			if refusal == "" {
				refusal = a.text
			}
			continue
		}
		for si, cs := range citedSentences(a.text) {
			s := strings.TrimSpace(attribution.ReplaceAllString(cs.text, ""))
			if normalize(s) == "" {
				continue
			}
			p := fusedPart{text: s, answer: ai, seq: si, rank: a.rank}
			p.add(a.label)
			p.cite(cs.cites)
			parts = merge(parts, p, g.Question)
		}
	}
	parts = relevantParts(parts, g.Question)
	if len(parts) == 0 {
		if refusal == "" {
			refusal = nothingText(zh)
		}
		return refusal, true
	}
	var b strings.Builder
	for i := 0; i < len(parts); {
		// A run is said with one attribution: parts of the same sources, or
		// a passage of one answer (its sentences in order), credited to
		// every source that said any of it.
		j := i + 1
		labels := parts[i].labels
		for j < len(parts) && (sameLabels(parts[i], parts[j]) ||
			parts[j].answer == parts[j-1].answer && parts[j].seq == parts[j-1].seq+1) {
			for _, l := range parts[j].labels {
				if !slices.Contains(labels, l) {
					labels = append(slices.Clip(labels), l)
				}
			}
			j++
		}
		run := ""
		for _, p := range parts[i:j] {
			run = join(run, p.cited())
		}
		if len(labels) > 0 {
			run = attribute(run, labels, zh)
		}
		b.WriteString(join("", run))
		if j < len(parts) && !zh {
			b.WriteString(" ")
		}
		i = j
	}
	return strings.TrimSpace(b.String()), false
}

// fusedInChinese reports whether a fused reply is in Chinese: the
// question's language, else the answers'.
func fusedInChinese(g llm.Grounding) bool {
	for _, q := range []string{g.Question, g.Asked} {
		if c, l := text.CountLetters(q); c > 0 || l > 0 {
			return c > 0 && c*3 >= l
		}
	}
	var c, l int
	for _, d := range g.Answers {
		a, b := text.CountLetters(d.Text)
		c, l = c+a, l+b
	}
	return c > 0 && c*3 >= l
}

var (
	citation    = regexp.MustCompile(`\s*\[(\d{1,3})\]`)
	attribution = regexp.MustCompile(`[（(]据[^）)]{1,12}[）)]|\s*\((?:knowledge base|web)(?:, (?:knowledge base|web))*\)`)
)

func (p *fusedPart) add(label string) {
	if label == "" {
		p.general = true
		return
	}
	for _, l := range p.labels {
		if l == label {
			return
		}
	}
	p.labels = append(p.labels, label)
}

func sameLabels(a, b fusedPart) bool {
	if len(a.labels) != len(b.labels) {
		return false
	}
	for i := range a.labels {
		if a.labels[i] != b.labels[i] {
			return false
		}
	}
	return true
}

// citedSentence is a sentence of an answer without its citation markers,
// and the markers.
type citedSentence struct {
	text  string
	cites []int
}

// citedSentences splits an answer into sentences and takes each one's
// citation markers out of it. Markers that open a sentence ("。[2]" splits
// as "[2]" at the start of the next one) belong to the sentence before.
func citedSentences(answer string) []citedSentence {
	var out []citedSentence
	for _, s := range text.Sentences(answer) {
		var cs citedSentence
		lead := true
		for _, m := range citation.FindAllStringSubmatchIndex(s, -1) {
			n, _ := strconv.Atoi(s[m[2]:m[3]])
			if lead && len(out) > 0 && normalize(citation.ReplaceAllString(s[:m[0]], "")) == "" {
				out[len(out)-1].cites = addCites(out[len(out)-1].cites, n)
				continue
			}
			lead = false
			cs.cites = addCites(cs.cites, n)
		}
		cs.text = citation.ReplaceAllString(s, "")
		if normalize(cs.text) == "" {
			continue
		}
		out = append(out, cs)
	}
	return out
}

func addCites(cites []int, ns ...int) []int {
	for _, n := range ns {
		if n > 0 && !slices.Contains(cites, n) {
			cites = append(cites, n)
		}
	}
	return cites
}

func (p *fusedPart) cite(ns []int) { p.cites = addCites(p.cites, ns...) }

// cited is the part's text with its citation markers before its closing
// punctuation ("…之一[1][3]。").
func (p fusedPart) cited() string {
	if len(p.cites) == 0 {
		return p.text
	}
	var b strings.Builder
	for _, n := range p.cites {
		b.WriteString("[" + strconv.Itoa(n) + "]")
	}
	return markSentence(p.text, b.String())
}

// merge adds part p, one answer's sentence, to parts: a part that already
// says what p says (in either script) takes p's sources and markers and
// keeps its first form; when p says what several parts say together (one
// answer's sentence spans two of another's: "甲！乙。" and "甲，乙。"),
// they all take them; when p says more than the parts it holds, it is said
// in their place, once.
func merge(parts []fusedPart, p fusedPart, question string) []fusedPart {
	qs := questionChars(question)
	holders, held := sameParts(parts, p.text, question, qs)
	if len(holders) > 0 {
		parts[holders[0]].take(p)
		return parts
	}
	if len(held) == 0 {
		return append(parts, p)
	}
	// What p says beyond the parts it holds, and whether it holds all of
	// their words (not only what they say, beside a label of their own).
	rest, fs, whole := fusionCore(p.text, qs), foldNorm(p.text), true
	for _, k := range held {
		rest = strings.Replace(rest, fusionCore(parts[k].text, qs), "", 1)
		whole = whole && strings.Contains(fs, foldNorm(parts[k].text))
	}
	if utf8.RuneCountInString(rest) < 2 || !whole {
		for _, k := range held {
			parts[k].take(p)
		}
		return parts
	}
	// The fuller saying is said, where the first part it holds was.
	k := held[0]
	q := parts[k]
	q.text = p.text
	q.take(p)
	for _, j := range held[1:] {
		q.take(parts[j])
	}
	parts[k] = q
	drop := held[1:]
	out := parts[:0]
	for i, x := range parts {
		if !slices.Contains(drop, i) {
			out = append(out, x)
		}
	}
	return out
}

// take gives p the sources and markers of o.
func (p *fusedPart) take(o fusedPart) {
	for _, l := range o.labels {
		p.add(l)
	}
	if o.general {
		p.general = true
	}
	p.cite(o.cites)
}

// sameParts finds the parts that say what s says: holders say all of it
// (with the question's own characters left out of both, what they add to
// the question, one holds the other, or their terms mostly agree); held are
// parts that s says all of and more. Characters are compared folded
// (traditional as simplified).
func sameParts(parts []fusedPart, s, question string, qs map[rune]bool) (holders, held []int) {
	cjk := strings.IndexFunc(question, text.IsCJK) >= 0 // characters are words only in Chinese
	cs := fusionCore(s, qs)
	fs := text.Fold(s)
	for k, p := range parts {
		cp := fusionCore(p.text, qs)
		long := cjk && utf8.RuneCountInString(cs) >= 2 && utf8.RuneCountInString(cp) >= 2
		switch {
		case long && strings.Contains(cp, cs), text.Similarity(text.Fold(p.text), fs) >= 0.8:
			holders = append(holders, k)
		case long && strings.Contains(cs, cp):
			held = append(held, k)
		}
	}
	return holders, held
}

// questionChars is the set of the question's letters and digits, folded.
func questionChars(question string) map[rune]bool {
	qs := map[rune]bool{}
	for _, r := range foldNorm(question) {
		qs[r] = true
	}
	return qs
}

// fusionCore is what sentence x adds to the question: its letters and
// digits, folded, without the question's (qs) and without a leading label
// ("第三条：", "Note 2:"), which names where the words come from, not what
// they say.
func fusionCore(x string, qs map[rune]bool) string {
	if i := strings.IndexAny(x, "：:"); i > 0 && utf8.RuneCountInString(x[:i]) <= 12 && normalize(x[i:]) != "" {
		x = x[i:]
	}
	var b strings.Builder
	for _, r := range foldNorm(x) {
		if !qs[r] {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// attribute puts the sources after a run of sentences, before its closing
// punctuation: "…利贞（据知识库、网络资料）。".
func attribute(run string, labels []string, zh bool) string {
	body := strings.TrimRightFunc(run, func(r rune) bool { return strings.ContainsRune("。！？；!?;.… ", r) })
	tail := run[len(body):]
	if zh {
		if tail == "" {
			tail = "。"
		}
		return body + "（据" + strings.Join(labels, "、") + "）" + tail
	}
	if tail == "" {
		tail = "."
	}
	return body + " (" + strings.Join(labels, ", ") + ")" + tail
}

// relevantParts drops the parts that answer much less of the question
// than the best one does (the prompt's "leave out what does not bear on
// the question"): a part is kept when it holds at least two thirds of the
// share of the question's content terms that the best part holds, or when
// it goes on from a kept part of the same answer (the rest of a quoted
// passage: "第三条：年假按工龄计算！" is followed by "满一年的员工有五天。").
// The knowledge base's parts are kept: its answer was read strictly from
// what retrieval found above the threshold, and the prompt puts it first
// (a quoted clause answers the question though it shares fewer of the
// question's words than a web page's "《员工手册》第三条：…" does).
func relevantParts(parts []fusedPart, question string) []fusedPart {
	qr := newQuery(question)
	if qr.nChar+qr.nGram == 0 || len(parts) < 2 {
		return parts
	}
	share := func(p fusedPart) float64 {
		m := qr.match(p.text)
		n := 0
		for _, ok := range m.chars {
			if ok {
				n++
			}
		}
		for _, ok := range m.grams {
			if ok {
				n++
			}
		}
		return float64(n) / float64(qr.nChar+qr.nGram)
	}
	shares := make([]float64, len(parts))
	best := 0.0
	for i, p := range parts {
		shares[i] = share(p)
		best = max(best, shares[i])
	}
	// What only the model said (no source backs it) is kept when it
	// answers more of the question than every sourced part does: the
	// offline model knows nothing but the conversation, and echoing an
	// earlier reply ("It opens at noon…" of another shop) beside the
	// sources' answer misleads.
	sourced := -1.0
	for i, p := range parts {
		if len(p.labels) > 0 {
			sourced = max(sourced, shares[i])
		}
	}
	var out []fusedPart
	kept := false
	for i, p := range parts {
		goesOn := kept && i > 0 && p.answer == parts[i-1].answer && p.seq == parts[i-1].seq+1
		kept = shares[i] >= best*2/3-1e-9 || goesOn || p.rank == 0
		if len(p.labels) == 0 && sourced >= 0 && shares[i] <= sourced+1e-9 {
			kept = false
		}
		if kept {
			out = append(out, p)
		}
	}
	return out
}

// isRefusalText reports whether an answer not marked as a refusal (a
// generative model's) only says that nothing was found.
func isRefusalText(s string) bool {
	for _, p := range []string{"没有找到与问题相关", "无法回答", "没有找到相关", "Nothing in the given context", "cannot be answered",
		"no relevant", "has nothing relevant", "found nothing relevant"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
