package extractive

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// Elliptical follow-ups that name only what changes ("那九二呢？" after
// "什么是九一？", "那坤呢？" after "什么是乾？", "上海呢？" after "北京的人口
// 是多少？") stand for the previous question with one of its parts swapped:
// the rewrite is that question with the part replaced, not the fragment
// with a topic in front. (A follow-up naming a part of a document is
// followStructure's.)

// reZhEllipsis matches "那X呢？", "那么X呢", "X呢？", "还有X呢？", "换成X呢".
var reZhEllipsis = regexp.MustCompile(`^(?:那么|那|还有|而|换成|如果是|要是)?\s*([^，,。？?！!\s]{1,12}?)\s*(?:的呢|呢)\s*[？?]?$`)

// zhNotSwap are fragments that ask something of their own ("为什么呢",
// "然后呢"), not a part to swap.
var zhNotSwap = []string{"什么", "怎么", "如何", "为何", "哪", "谁", "多少", "几", "具体", "然后", "后来", "之后", "以后", "原因", "意思", "结果", "区别", "呢", "吗"}

// swapEllipsisZH rewrites an elliptical follow-up as the previous user
// question with its counterpart of the named part replaced (see
// counterpartZH), the previous question first made standalone itself. It
// reports false when q is not such a follow-up or no counterpart is found.
func (st *rwState) swapEllipsisZH(f memory.FollowUp, q string) (string, bool) {
	m := reZhEllipsis.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	x := m[1]
	for _, ws := range [][]string{zhNotSwap, zhPronounsOf(st.classifiers())} {
		for _, w := range ws {
			if strings.Contains(x, w) {
				return "", false
			}
		}
	}
	prev, at := lastUserQuestion(f.History)
	if prev == "" || !text.MostlyCJK(prev) || strings.Contains(prev, x) {
		return "", false
	}
	// The previous question as it stood alone (it may itself say 它).
	prev = st.standaloneAt(f, at)
	if strings.Contains(prev, x) {
		return "", false
	}
	// The thing the conversation is about. A bare name of its kind takes
	// its classifier (with the classifier 篇, "那为政呢？" after 学而篇).
	subject := st.referentZH(memory.FollowUp{Topic: f.Topic, History: f.History}, nil, false)
	if r := []rune(x); len(r) <= 2 && text.AllCJK(x) && !ofAKind(x) {
		for _, c := range st.classifiers() {
			if strings.HasSuffix(subject, c) && !strings.HasSuffix(x, c) {
				x += c
				break
			}
		}
	}
	part, kind := st.counterpartZH(prev, x, subject)
	if part == "" && !kind && subject != "" && strings.Contains(prev, subject) {
		// The subject, when the previous question names it: "北京的人口是
		// 多少？" + "上海呢？".
		part = subject
	}
	if part == "" && !kind {
		// The name the previous question asks about ("什么是太极？" +
		// "那坤呢？" → "什么是坤？").
		if ns := zhNames(prev, st.classifiers()); len(ns) > 0 {
			n := strings.TrimPrefix(strings.TrimPrefix(ns[0], zhWork), zhPerson)
			if strings.Contains(prev, n) && n != x {
				part = n
			}
		}
	}
	if part == "" {
		return "", false
	}
	i := strings.Index(prev, part)
	return prev[:i] + x + prev[i+len(part):], true
}

// lastUserQuestion returns the last user message of history and its index,
// or "" and -1.
func lastUserQuestion(history []llm.Message) (string, int) {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == llm.RoleUser {
			if c := strings.TrimSpace(history[i].Content); c != "" {
				return c, i
			}
		}
	}
	return "", -1
}

// zhKinds are forms of parts that a follow-up swaps for another of the
// same form: an ordinal (第三章), a number with its unit (2021年, 三次).
var zhKinds = []*regexp.Regexp{
	regexp.MustCompile(`第[一二三四五六七八九十百零〇两\d]+[章节回篇卷条部集季课期届]?`),
	regexp.MustCompile(`[一二三四五六七八九十百千万两\d]+[年月日号岁个次位本]`),
}

// counterpartZH returns the part of prev that x takes the place of: a name
// of the vocabulary in prev when x is one too; else the first part of
// prev of x's form (zhKinds; kind is true when x has one, and then no
// other part stands for it); else the conversation's subject when prev
// names it and it ends as x does (names of one kind, with one classifier,
// differ in length); else a stretch of prev as long as x that shares a
// character with it at the same place ("学而篇" for "为政篇"), the most
// such characters first, then the earliest.
func (st *rwState) counterpartZH(prev, x, subject string) (part string, kind bool) {
	vocab := st.vocab
	if vocab != nil && len(vocab.NamesIn(x)) > 0 {
		for _, n := range vocab.NamesIn(prev) {
			if n != x && !strings.Contains(x, n) && !strings.Contains(n, x) {
				return n, false
			}
		}
	}
	for _, k := range zhKinds {
		if wholeMatch(k, x) {
			for _, m := range k.FindAllString(prev, -1) {
				if m != x {
					return m, true
				}
			}
			return "", true
		}
	}
	if subject != "" && subject != x && strings.Contains(prev, subject) && lastRuneOf(subject) == lastRuneOf(x) {
		return subject, false
	}
	xr := []rune(x)
	if len(xr) < 2 {
		return "", false
	}
	pr := []rune(prev)
	best, bestSame := "", 0
	for i := 0; i+len(xr) <= len(pr); i++ {
		cand := pr[i : i+len(xr)]
		same := 0
		for j, r := range cand {
			if !text.IsCJK(r) {
				same = 0
				break
			}
			if r == xr[j] {
				same++
			}
		}
		if same > bestSame && same < len(xr) {
			best, bestSame = string(cand), same
		}
	}
	return best, false
}

// ofAKind reports whether x is wholly of one of zhKinds' forms.
func ofAKind(x string) bool {
	for _, k := range zhKinds {
		if wholeMatch(k, x) {
			return true
		}
	}
	return false
}

func lastRuneOf(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// wholeMatch reports whether re matches all of s.
func wholeMatch(re *regexp.Regexp, s string) bool {
	loc := re.FindStringIndex(s)
	return loc != nil && loc[0] == 0 && loc[1] == len(s)
}
