package extractive

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// The offline rewrite in Chinese: pronouns and demonstratives (它, 其, 这家,
// 这 and a profile's classifier), the names of a sentence (quoted titles,
// the subjects of definitional patterns, a name with a classifier) and the
// most salient of them.

// zhPronouns are the referring words, longest first. A demonstrative with
// a classifier or noun ("这家", and one of the profile's classifiers:
// zhPronounsOf) is replaced whole.
var zhPronouns = []string{"这个", "那个", "这家", "那家", "这位", "那位", "这本", "这部", "它们", "他们", "她们",
	"它的", "他的", "她的", "它", "他", "她", "其", "此", "该"}

// zhNotPronoun are words holding a pronoun's character that refer to
// nothing ("其他", "因此", "应该").
var zhNotPronoun = []string{"其他", "其它", "其实", "其中", "其余", "尤其", "极其", "与其", "此外", "因此", "如此", "彼此", "从此", "此时", "由此",
	"应该", "活该", "他人", "其次", "此后", "自此", "就此", "为此", "对此", "在此", "她人", "它人"}

// zhName finds entity names in a Chinese sentence: quoted titles and
// the subjects of definitional patterns ("什么是太极", "太极是什么",
// "推荐全聚德", "全聚德是一家…").
var zhNamePatterns = []*regexp.Regexp{
	regexp.MustCompile(`《([^》]{1,20})》`),
	regexp.MustCompile(`[“「]([^”」]{1,12})[”」]`),
	regexp.MustCompile(`(?:什么是|何为|何谓|介绍一下|讲讲|说说|推荐|叫做|名叫|叫|就是|选)([\p{Han}A-Za-z0-9·]{2,8})`),
	regexp.MustCompile(`^(\p{Han}{2,3}?)(?:写了|写过|写的|说过|说|著有|作|认为|提出|发明|创立|创建|出生|生于|死于|住在|来自)`),
	regexp.MustCompile(`^(?:请问)?((?:[^\P{Han}是的有]|[A-Za-z0-9·]){2,8}?)(?:的|是什么|是谁|是哪|是一|是个|是位|是本|是部|是座|是家|怎么样|有什么|指什么)`),
}

// classifierNames matches a name and one of the profile's classifiers
// anywhere in a clause (with the classifier 篇: "出自学而篇", "读为政篇").
func classifierNames(cls []string) *regexp.Regexp {
	key := strings.Join(cls, "")
	if re, ok := classifierNameREs.Load(key); ok {
		return re.(*regexp.Regexp)
	}
	var qs []string
	for _, c := range cls {
		qs = append(qs, regexp.QuoteMeta(c))
	}
	re := regexp.MustCompile(`(?:^|[自是的和与及读看在为于说到了即从比])(\p{Han}{1,2}?(?:` + strings.Join(qs, "|") + `))`)
	classifierNameREs.Store(key, re)
	return re
}

var classifierNameREs sync.Map

// zhWork and zhPerson prefix the names zhNames found as titles of works
// and as the subjects of what people do ("孔子写了…").
const (
	zhWork   = "\x00"
	zhPerson = "\x01"
)

// zhStop are pieces the patterns catch that name nothing.
var zhStop = map[string]bool{"什么": true, "这个": true, "那个": true, "一下": true, "我们": true, "你们": true, "他们": true, "它们": true,
	"一个": true, "一家": true, "一些": true, "哪些": true, "哪个": true, "怎么": true, "为什么": true}

// zhNames returns the names of s; works and people are marked (zhWork,
// zhPerson) so that 他/她 do not resolve to a book nor 它 to a person.
func zhNames(s string, cls []string) []string {
	pats := zhNamePatterns
	if len(cls) > 0 {
		pats = append(slices.Clip(pats), classifierNames(cls))
	}
	var out []string
	for _, sent := range text.Sentences(s) {
		for _, clause := range strings.FieldsFunc(sent, func(r rune) bool { return strings.ContainsRune("，,；;：:。！？?!、", r) }) {
			for _, p := range pats {
				for _, m := range p.FindAllStringSubmatch(clause, -1) {
					n := strings.TrimRight(m[1], "的了吗呢吧")
					if utf8.RuneCountInString(n) >= 2 && !zhStop[n] && !startsWithPronoun(n) {
						switch p {
						case zhNamePatterns[0]:
							n = zhWork + n
						case zhNamePatterns[3]:
							n = zhPerson + n
						}
						out = append(out, n)
					}
				}
			}
		}
	}
	return out
}

func startsWithPronoun(n string) bool {
	for _, p := range []string{"它", "他", "她", "这", "那", "其", "此", "该", "我", "你", "哪", "每", "某", "一", "第"} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// referentZH finds the most salient entity of f in Chinese: a person for
// 他/她 (person), and a name ending in one of suffixes (a classifier) when
// the pronoun asks for one.
func (st *rwState) referentZH(f memory.FollowUp, suffixes []string, person bool) string {
	vocab := st.vocab
	s := &salience{score: map[string]float64{}, first: map[string]int{}}
	for i, t := range f.Topic {
		if t = cleanTopic(t); t != "" && text.MostlyCJK(t) {
			s.add(t, topicWeight/float64(i+1))
		}
	}
	asked := false // the latest user message is seen
	for i, h := range recentMessages(f.History, 6) {
		w := 1 / (1 + 0.5*float64(i))
		if h.Role == llm.RoleUser && !asked {
			// What the user just asked to have explained ("什么是太极？") is
			// what their next 它 most likely means, over names said more
			// often before.
			asked = true
			if zhDefines.MatchString(h.Content) {
				w *= lastAskedFactor
			}
		}
		seen := map[string]bool{}
		if vocab != nil {
			for _, n := range vocab.NamesIn(h.Content) {
				if !seen[n] {
					seen[n] = true
					s.add(n, knownFactor*w)
				}
			}
		}
		for _, n := range zhNames(h.Content, st.classifiers()) {
			work, human := strings.HasPrefix(n, zhWork), strings.HasPrefix(n, zhPerson)
			n = strings.TrimPrefix(strings.TrimPrefix(n, zhWork), zhPerson)
			if work && person || human && !person {
				continue
			}
			if work {
				n = "《" + n + "》"
			}
			if !seen[n] {
				seen[n] = true
				s.add(n, w)
			}
		}
	}
	// A classifier pronoun (这 and a classifier) prefers a name of its
	// kind.
	if len(suffixes) > 0 {
		var kind []string
		for n := range s.score {
			if slices.ContainsFunc(suffixes, func(c string) bool { return strings.HasSuffix(n, c) }) {
				kind = append(kind, n)
			}
		}
		if len(kind) > 0 {
			sort.Slice(kind, func(a, b int) bool {
				if s.score[kind[a]] != s.score[kind[b]] {
					return s.score[kind[a]] > s.score[kind[b]]
				}
				return s.first[kind[a]] < s.first[kind[b]]
			})
			return kind[0]
		}
	}
	return s.best()
}

func (st *rwState) rewriteZH(f memory.FollowUp, q string) string {
	if out, ok := st.swapEllipsisZH(f, q); ok {
		return out
	}
	at, p := st.zhPronoun(q)
	var suffixes []string
	if p != "" {
		if r := []rune(p); len(r) == 2 && slices.Contains(st.classifiers(), string(r[1])) {
			suffixes = []string{string(r[1])}
		}
		// 它 of a part the profile names ("它的九二") stands for a thing
		// named with a classifier.
		if suffixes == nil && st.asksForPart(q[at+len(p):]) {
			suffixes = st.classifiers()
		}
	}
	person := strings.HasPrefix(p, "他") || strings.HasPrefix(p, "她")
	ent := st.referentZH(f, suffixes, person)
	if ent == "" || strings.Contains(q, ent) {
		return q
	}
	if p != "" {
		rep := ent
		switch {
		case p == "其":
			rep = ent + "的"
		case strings.HasSuffix(p, "的"):
			rep = ent + "的"
		}
		return q[:at] + rep + q[at+len(p):]
	}
	// An elliptical question ("为什么？", "具体呢？"); a statement, or a
	// question about the speaker ("我叫什么名字？"), stays as it is.
	if !zhAsks(q) || strings.Contains(q, "我") {
		return q
	}
	return "关于" + ent + "，" + q
}

// zhDefines matches a question asking what something is.
var zhDefines = regexp.MustCompile(`^\s*(?:请问)?(?:什么是|何为|何谓|介绍一下|讲讲|说说|解释一下)|是什么[？?]?\s*$`)

// asksForPart reports whether rest (what follows a pronoun) asks for a
// part the profile names: one of its kinds ("的注释"), a position ("的序
// 言") or a position's kind.
func (st *rwState) asksForPart(rest string) bool {
	p := st.known.Profile
	if p == nil {
		return false
	}
	rest = strings.TrimPrefix(rest, "的")
	var names []string
	for _, k := range p.Kinds {
		names = append(append(names, k.Name), k.Aliases...)
	}
	for _, pos := range p.Positions {
		names = append(append(names, pos.Names...), pos.Kind)
	}
	return slices.ContainsFunc(names, func(n string) bool { return n != "" && strings.HasPrefix(rest, n) })
}

// zhAsks reports whether a Chinese sentence asks something.
func zhAsks(q string) bool {
	if strings.ContainsAny(q, "？?") {
		return true
	}
	for _, w := range []string{"吗", "呢", "什么", "怎么", "为什么", "如何", "哪", "谁", "几", "多少", "是否"} {
		if strings.Contains(q, w) {
			return true
		}
	}
	return false
}

// zhPronounsOf are the referring words with the demonstratives of the
// classifiers cls (这, 那, 该, 此 and the classifier) first.
func zhPronounsOf(cls []string) []string {
	if len(cls) == 0 {
		return zhPronouns
	}
	var out []string
	for _, c := range cls {
		for _, d := range []string{"这", "那", "该", "此"} {
			out = append(out, d+c)
		}
	}
	return append(out, zhPronouns...)
}

// zhPronoun returns the byte offset and text of q's first referring word,
// or -1 and "".
func (st *rwState) zhPronoun(q string) (int, string) {
	pronouns := zhPronounsOf(st.classifiers())
	for i := 0; i < len(q); {
		rest := q[i:]
		skip := false
		for _, w := range zhNotPronoun {
			if strings.HasPrefix(rest, w) {
				i += len(w)
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		for _, p := range pronouns {
			if strings.HasPrefix(rest, p) {
				return i, p
			}
		}
		_, n := utf8.DecodeRuneInString(rest)
		i += n
	}
	return -1, ""
}
