package extractive

import (
	"context"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// Extractor is the offline extractor (memory.Extractor): entity facts,
// triples and user facts read from statements by lexical patterns — the
// sentences as said, never invented text. It reads only the user's
// messages and those of named speakers, never the unnamed assistant's. It
// calls no model, so memory gives it each turn as it comes
// (memory.Incremental).
type Extractor struct{}

// NewExtractor returns the offline extractor.
func NewExtractor() *Extractor { return &Extractor{} }

// Incremental is true: extraction costs no model call.
func (*Extractor) Incremental() bool { return true }

// Entities returns each statement (not a question, at least three terms)
// as a fact about the names it mentions and, in the first person, about
// its speaker.
func (*Extractor) Entities(ctx context.Context, lines []memory.Line, known []string) ([]memory.EntityFact, error) {
	return lexicalEntities(lines, known), nil
}

// Triples returns the triples of statements that begin with their
// subject.
func (*Extractor) Triples(ctx context.Context, lines []memory.Line) ([]memory.Triple, error) {
	return lexicalTriples(lines), nil
}

// UserFacts returns the user's first-person statements.
func (*Extractor) UserFacts(ctx context.Context, lines []memory.Line, known []string) ([]string, error) {
	var facts []string
	for _, l := range lines {
		if l.Role != llm.RoleUser {
			continue
		}
		for _, s := range statements(l.Text) {
			if text.FirstPerson(s) && len(text.ChatTerms(s)) >= 2 {
				facts = append(facts, text.Truncate(s, 200))
			}
		}
	}
	return facts, nil
}

// notNames are capitalised words that start English sentences but name
// nothing.
var notNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`I I'm I've I'd I'll The A An It It's Its This That These Those There Here Yes No Not Hey Hi Hello
		Thanks Thank Wow Oh Ooh Yeah Yep Yup Sure Great Awesome Cool So And But Or Also Well Ok Okay OK My Your Our Their His Her
		We You He She They Me Us Them What When Where Who Why How Which Congrats Congratulations Haha Lol Absolutely Definitely
		Totally Nice Good Love Glad Sorry Just Really Do Did Does Have Has Had Let's Let Can Could Would Should Will Maybe Perhaps
		Amazing Exactly True Right Agreed Anyway Btw Hmm Ah Aw Aww Bye See Take Keep Sounds Sounds Looks Hope Happy Definitely
		If As At In On Of For With From To By After Before Since Then Now Today Yesterday Tomorrow Last Next Every Some Any All
		Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August September
		October November December Mr Mrs Ms Dr AI Human Book Reserve Find Give Show Please Get Make Try Check Recommend
		Suggest Need Want Cancel Add Send Call Pick Choose Tell`) {
		notNames[w] = true
	}
}

// names returns the names in an English sentence: runs of capitalised
// words, a sentence-initial one only when it is a known name or followed
// by another capitalised word. In Chinese, titles in 《》 and quoted terms.
func names(s string, known map[string]bool) []string {
	var out []string
	for _, pair := range [][2]string{{"《", "》"}, {"「", "」"}, {"“", "”"}} {
		rest := s
		for {
			i := strings.Index(rest, pair[0])
			if i < 0 {
				break
			}
			rest = rest[i+len(pair[0]):]
			j := strings.Index(rest, pair[1])
			if j < 0 {
				break
			}
			if n := strings.TrimSpace(rest[:j]); n != "" && utf8.RuneCountInString(n) <= 20 {
				out = append(out, n)
			}
			rest = rest[j+len(pair[1]):]
		}
	}
	ws := text.Words(s)
	for i := 0; i < len(ws); i++ {
		if !startsUpper(ws[i]) || notNames[ws[i]] {
			continue
		}
		j := i
		for j+1 < len(ws) && startsUpper(ws[j+1]) && !notNames[ws[j+1]] {
			j++
		}
		name := strings.Join(ws[i:j+1], " ")
		if i > 0 || j > i || known[name] {
			out = append(out, name)
		}
		i = j
	}
	return out
}

// lexicalEntities is offline entity extraction: each statement (not a
// question, at least four terms) is a fact about the names it mentions and,
// when it is in the first person, about its speaker.
func lexicalEntities(lines []memory.Line, known []string) []memory.EntityFact {
	knownSet := map[string]bool{}
	for _, k := range known {
		knownSet[k] = true
	}
	for _, l := range lines {
		if l.Speaker != "" {
			knownSet[l.Speaker] = true
		}
	}
	var out []memory.EntityFact
	for _, l := range lines {
		if !statesFacts(l) {
			continue
		}
		for _, s := range statements(l.Text) {
			if len(text.ChatTerms(s)) < 3 {
				continue
			}
			fact := text.Truncate(l.Label()+": "+s, 240)
			seen := map[string]bool{}
			if e := l.Entity(); e != "" && text.FirstPerson(s) {
				out = append(out, memory.EntityFact{Name: e, Fact: fact})
				seen[e] = true
			}
			for _, n := range names(s, knownSet) {
				if !seen[n] {
					seen[n] = true
					out = append(out, memory.EntityFact{Name: n, Fact: fact})
				}
			}
		}
	}
	return out
}

// Offline triple extraction, and which lines state facts and which
// sentences are statements.

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
func lexicalTriples(lines []memory.Line) []memory.Triple {
	var out []memory.Triple
	for _, l := range lines {
		if !statesFacts(l) {
			continue
		}
		for _, s := range statements(l.Text) {
			if text.MostlyCJK(s) {
				for _, t := range zhTriples(s, l) {
					t.Turn = l.Turn
					out = append(out, t)
				}
				continue
			}
			if t, ok := tripleOf(s, l); ok {
				t.Turn = l.Turn
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
func statesFacts(l memory.Line) bool {
	return l.Role == llm.RoleUser || l.Role == "" || l.Speaker != "" && l.Role != llm.RoleSystem
}

// statements returns the sentences of s that state something: not
// questions, not refusals ("I don't know", "没有找到"), with a leading
// bracketed tag ("（离线抽取式模型）", "(note)") removed.
func statements(s string) []string {
	var out []string
	for _, sent := range text.Sentences(s) {
		sent = strings.TrimSpace(leadingTag.ReplaceAllString(sent, ""))
		if sent == "" || endsAsQuestion(sent) || isRefusal(sent) {
			continue
		}
		out = append(out, sent)
	}
	return out
}

var leadingTag = regexp.MustCompile(`^\s*(?:[（(【\[][^）)】\]]{1,30}[）)】\]]\s*)+`)

func tripleOf(s string, l memory.Line) (memory.Triple, bool) {
	s = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(s), "。！!.;；…"))
	if text.MostlyCJK(s) {
		return zhTriple(s, l)
	}
	ws := strings.Fields(s)
	if len(ws) < 3 {
		return memory.Triple{}, false
	}
	clean := func(w string) string { return strings.Trim(w, `,;:"'“”‘’()`) }
	var subj string
	i := 0
	switch first := clean(ws[0]); {
	case first == "I" || first == "I've" || first == "I'm":
		if subj = l.Entity(); subj == "" {
			return memory.Triple{}, false
		}
		if first == "I'm" {
			ws = append([]string{"I", "am"}, ws[1:]...)
		} else if first == "I've" {
			ws = append([]string{"I", "have"}, ws[1:]...)
		}
		i = 1
	case first == "My" || first == "my":
		if subj = l.Entity(); subj == "" {
			return memory.Triple{}, false
		}
		// "My name is X" → (speaker, name is, X)
		return memory.Triple{Subject: subj, Relation: clean(ws[1]) + " " + clean(ws[2]), Object: clean(strings.Join(ws[3:], " "))}, len(ws) > 3
	case startsUpper(first) && !notNames[first] && !imperativeNext[strings.ToLower(clean(ws[1]))]:
		j := 1
		for j < len(ws) && startsUpper(clean(ws[j])) && !notNames[clean(ws[j])] {
			j++
		}
		subj = clean(strings.Join(ws[:j], " "))
		i = j
	default:
		return memory.Triple{}, false
	}
	if i >= len(ws)-1 {
		return memory.Triple{}, false
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
		return memory.Triple{}, false
	}
	return memory.Triple{Subject: subj, Relation: strings.Join(rel, " "), Object: o}, true
}

// zhTriples reads a triple from each clause of a Chinese statement; a
// clause without a subject ("我叫李雷，住在北京") takes the speaker's when
// the statement began with it.
func zhTriples(s string, l memory.Line) []memory.Triple {
	var out []memory.Triple
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

func zhTriple(s string, l memory.Line) (memory.Triple, bool) {
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
			return memory.Triple{}, false
		}
		switch {
		case subj == "我":
			subj = l.Entity()
		case strings.HasPrefix(subj, "我的"):
			rel = strings.TrimPrefix(subj, "我的") + mk
			subj = l.Entity()
		case strings.HasPrefix(subj, "我"):
			rel = strings.TrimPrefix(subj, "我") + mk
			subj = l.Entity()
		}
		if mk == "的名字是" {
			rel = "名字是"
		}
		// "也喜欢", "还住在": the adverb is not part of the relation.
		if r := strings.TrimLeft(rel, "也还都"); r != "" {
			rel = r
		}
		if subj == "" {
			return memory.Triple{}, false
		}
		return memory.Triple{Subject: subj, Relation: rel, Object: text.Truncate(obj, 40)}, true
	}
	return memory.Triple{}, false
}
