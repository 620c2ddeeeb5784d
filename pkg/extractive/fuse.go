package extractive

import (
	"regexp"
	"slices"
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
// left out.

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
		for si, s := range text.Sentences(citation.ReplaceAllString(a.text, "")) {
			s = strings.TrimSpace(attribution.ReplaceAllString(s, ""))
			if normalize(s) == "" {
				continue
			}
			if k := samePart(parts, s, g.Question); k >= 0 {
				// The fuller of two sayings is the one said ("是故《易》有太
				// 極，是生兩儀，兩儀生四象…" over "是故《易》有太极，是生两仪").
				if fs, fp := foldNorm(s), foldNorm(parts[k].text); len(fs) > len(fp) && strings.Contains(fs, fp) {
					parts[k].text = s
				}
				parts[k].add(a.label)
				continue
			}
			p := fusedPart{text: s, answer: ai, seq: si, rank: a.rank}
			p.add(a.label)
			parts = append(parts, p)
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
			run = join(run, p.text)
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
	citation    = regexp.MustCompile(`\s*\[\d{1,3}\]`)
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

// samePart finds a part that says what s says: with the (Chinese)
// question's own characters left out of both (what they add to the question), one holds
// the other, or their terms mostly agree.
func samePart(parts []fusedPart, s, question string) int {
	qs := map[rune]bool{}
	for _, r := range foldNorm(question) {
		qs[r] = true
	}
	core := func(x string) string {
		// A leading label ("《彖》曰：", "乾卦·彖传上：") names where the
		// words come from, not what they say.
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
	cjk := strings.IndexFunc(question, text.IsCJK) >= 0 // characters are words only in Chinese
	cs := core(s)
	for k, p := range parts {
		cp := core(p.text)
		if cjk && len([]rune(cs)) >= 2 && len([]rune(cp)) >= 2 && (strings.Contains(cp, cs) || strings.Contains(cs, cp)) {
			return k
		}
		if text.Similarity(text.Fold(p.text), text.Fold(s)) >= 0.8 {
			return k
		}
	}
	return -1
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
// passage: "《彖》曰：至哉坤元！" is followed by "萬物資生，乃順承天。").
// The knowledge base's parts are kept: its answer was read strictly from
// what retrieval found above the threshold, and the prompt puts it first
// ("《彖》曰：大哉乾元" answers 乾卦的彖传 though it shares less of the
// question's words than a web page's "乾卦·彖传上：…" does).
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
	// earlier reply ("It opens at noon…" of another restaurant) beside the
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
