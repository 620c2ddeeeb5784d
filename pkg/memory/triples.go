package memory

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// Offline triple extraction and the checks every extraction shares: which
// lines state facts, which sentences are statements, whether a model's
// triple is grounded in what was said.

// relationMarkers split a Chinese statement into subject, relation and
// object, longest first.
var relationMarkers = []string{"的名字是", "名字叫", "住在", "来自", "喜欢", "正在", "属于", "认为", "觉得", "打算", "准备", "是", "叫", "在", "有", "爱", "想", "要", "去", "学"}

// particles extend an English relation verb ("went to", "works at").
var particles = map[string]bool{"to": true, "in": true, "at": true, "on": true, "for": true, "with": true, "about": true,
	"from": true, "up": true, "out": true, "into": true, "of": true, "by": true, "as": true, "a": true, "an": true, "the": true}

// imperativeNext are words that, after a sentence's capitalised first word,
// show it is a verb in the imperative ("Enjoy your study", "Check out
// ...") rather than a name.
var imperativeNext = map[string]bool{"your": true, "the": true, "a": true, "an": true, "my": true, "our": true, "this": true,
	"that": true, "it": true, "me": true, "us": true, "them": true, "him": true, "her": true, "yourself": true, "out": true,
	"up": true, "on": true, "in": true, "to": true, "for": true, "with": true, "some": true, "more": true}

// lexicalTriples is offline triple extraction from statements that begin
// with their subject: the speaker ("I ...", "My X ...", "我..."), or a name.
// The relation is the verb (with its particle) that follows, the object the
// rest of the clause.
func lexicalTriples(lines []line) []Triple {
	var out []Triple
	for _, l := range lines {
		if !statesFacts(l) {
			continue
		}
		for _, s := range statements(l.text) {
			if isCJKText(s) {
				for _, t := range zhTriples(s, l) {
					t.Turn = l.turn
					out = append(out, t)
				}
				continue
			}
			if t, ok := tripleOf(s, l); ok {
				t.Turn = l.turn
				out = append(out, t)
			}
		}
	}
	return out
}

// statesFacts reports whether offline extraction reads line l: the user's
// messages and those of named people (an imported chat between people),
// never the unnamed assistant's (answers, refusals, the offline model's
// banners) or system text.
func statesFacts(l line) bool {
	return l.role == llm.RoleUser || l.role == "" || l.speaker != "" && l.role != llm.RoleSystem
}

// statements returns the sentences of s that state something: not
// questions, not refusals ("I don't know", "没有找到"), with a leading
// bracketed tag ("（离线抽取式模型）", "(note)") removed.
func statements(s string) []string {
	var out []string
	for _, sent := range text.Sentences(s) {
		sent = strings.TrimSpace(leadingTag.ReplaceAllString(sent, ""))
		if sent == "" || isQuestion(sent) || isRefusal(sent) {
			continue
		}
		out = append(out, sent)
	}
	return out
}

var leadingTag = regexp.MustCompile(`^\s*(?:[（(【\[][^）)】\]]{1,30}[）)】\]]\s*)+`)

// linesText is the lower-cased text of lines, for grounding checks.
func linesText(lines []line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.ToLower(l.text))
		b.WriteByte('\n')
	}
	return b.String()
}

// grounded reports whether the name or phrase s occurs in said (the
// lower-cased conversation), "user" always does, and a phrase most of
// whose terms occur counts.
func grounded(s, said string) bool {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == UserLabel || s == "" {
		return s != ""
	}
	if strings.Contains(said, s) {
		return true
	}
	return groundedTerms(s, said)
}

// groundedTerms reports whether at least half of the words of s (CJK:
// characters) occur in said as words.
func groundedTerms(s, said string) bool {
	ws := distinct(words(strings.ToLower(s)))
	if len(ws) == 0 {
		return false
	}
	in := 0
	for _, w := range ws {
		if containsWord(said, w) {
			in++
		}
	}
	return 2*in >= len(ws)
}

func tripleOf(s string, l line) (Triple, bool) {
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "。！!.;；…"))
	if isCJKText(s) {
		return zhTriple(s, l)
	}
	ws := strings.Fields(s)
	if len(ws) < 3 {
		return Triple{}, false
	}
	clean := func(w string) string { return strings.Trim(w, `,;:"'“”‘’()`) }
	var subj string
	i := 0
	switch first := clean(ws[0]); {
	case first == "I" || first == "I've" || first == "I'm":
		if subj = l.entity(); subj == "" {
			return Triple{}, false
		}
		if first == "I'm" {
			ws = append([]string{"I", "am"}, ws[1:]...)
		} else if first == "I've" {
			ws = append([]string{"I", "have"}, ws[1:]...)
		}
		i = 1
	case first == "My" || first == "my":
		if subj = l.entity(); subj == "" {
			return Triple{}, false
		}
		// "My name is X" → (speaker, name is, X)
		return Triple{Subject: subj, Relation: clean(ws[1]) + " " + clean(ws[2]), Object: clean(strings.Join(ws[3:], " "))}, len(ws) > 3
	case startsUpper(first) && !notNames[first] && !imperativeNext[strings.ToLower(clean(ws[1]))]:
		j := 1
		for j < len(ws) && startsUpper(clean(ws[j])) && !notNames[clean(ws[j])] {
			j++
		}
		subj = clean(strings.Join(ws[:j], " "))
		i = j
	default:
		return Triple{}, false
	}
	if i >= len(ws)-1 {
		return Triple{}, false
	}
	rel := []string{clean(ws[i])}
	i++
	for i < len(ws)-1 && len(rel) < 3 && (particles[strings.ToLower(clean(ws[i]))] || strings.HasSuffix(clean(ws[i]), "ing")) {
		if w := strings.ToLower(clean(ws[i])); w == "a" || w == "an" || w == "the" {
			break
		}
		rel = append(rel, clean(ws[i]))
		i++
	}
	obj := ws[i:]
	// Stop at the first clause break.
	for k, w := range obj {
		if k > 0 && (strings.HasSuffix(w, ",") || strings.HasSuffix(w, ";") || strings.HasSuffix(w, " -")) {
			obj = obj[:k+1]
			break
		}
	}
	if len(obj) > 12 {
		obj = obj[:12]
	}
	o := clean(strings.Join(obj, " "))
	if o == "" {
		return Triple{}, false
	}
	return Triple{Subject: subj, Relation: strings.Join(rel, " "), Object: o}, true
}

// zhTriples reads a triple from each clause of a Chinese statement; a
// clause without a subject ("我叫李雷，住在北京") takes the speaker's when
// the statement began with it.
func zhTriples(s string, l line) []Triple {
	var out []Triple
	speaker := false
	for i, c := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("，,；;：:", r) }) {
		c = strings.TrimSpace(c)
		if i == 0 || strings.HasPrefix(c, "我") {
			speaker = strings.HasPrefix(c, "我")
		} else if speaker {
			for _, mk := range relationMarkers {
				if strings.HasPrefix(c, mk) || strings.HasPrefix(c, "也"+mk) || strings.HasPrefix(c, "还"+mk) {
					c = "我" + c
					break
				}
			}
		}
		if t, ok := zhTriple(c, l); ok {
			out = append(out, t)
		}
	}
	return out
}

func zhTriple(s string, l line) (Triple, bool) {
	s = strings.TrimRight(strings.TrimSpace(s), "。！!.;；…")
	if i := strings.IndexAny(s, "，,；;：:"); i > 0 {
		s = s[:i]
	}
	for _, mk := range relationMarkers {
		i := strings.Index(s, mk)
		if i <= 0 {
			continue
		}
		subj, obj := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(mk):])
		rel := mk
		if obj == "" || utf8.RuneCountInString(subj) > 10 {
			return Triple{}, false
		}
		switch {
		case subj == "我":
			subj = l.entity()
		case strings.HasPrefix(subj, "我的"):
			rel = strings.TrimPrefix(subj, "我的") + mk
			subj = l.entity()
		case strings.HasPrefix(subj, "我"):
			rel = strings.TrimPrefix(subj, "我") + mk
			subj = l.entity()
		}
		if mk == "的名字是" {
			rel = "名字是"
		}
		// "也喜欢", "还住在": the adverb is not part of the relation.
		if r := strings.TrimLeft(rel, "也还都"); r != "" {
			rel = r
		}
		if subj == "" {
			return Triple{}, false
		}
		return Triple{Subject: subj, Relation: rel, Object: truncateRunes(obj, 40)}, true
	}
	return Triple{}, false
}

// mergeTriples appends ts to old, dropping repeats and keeping the last max.
func mergeTriples(old, ts []Triple, maxTriples int) []Triple {
	out := slices.Clone(old)
	seen := map[string]bool{}
	key := func(t Triple) string {
		return strings.ToLower(t.Subject + "\x00" + t.Relation + "\x00" + t.Object)
	}
	for _, t := range out {
		seen[key(t)] = true
	}
	for _, t := range ts {
		if t.Subject == "" || t.Relation == "" || t.Object == "" || seen[key(t)] {
			continue
		}
		seen[key(t)] = true
		out = append(out, t)
	}
	if len(out) > maxTriples {
		out = slices.Clone(out[len(out)-maxTriples:])
	}
	return out
}
