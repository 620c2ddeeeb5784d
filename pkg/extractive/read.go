package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file is the model's reading of structured material: the headings
// that give each line its section path, questions that ask for the source
// of a quoted phrase, and (named.go) sub-parts named by a profile.

// ctxLine is one line of the material with where it stands.
type ctxLine struct {
	text  string
	path  string // the section path: its evidence's, then the headings above it, " > " between
	cite  int    // its evidence's citation number, 0 when it has none
	entry int    // index of its entry (a passage, or a message)
	// speaker is who said it: speakerNone for the evidence.
	speaker int
}

// maxReplyRunes is the length the generic reading keeps a reply within
// (its first sentence excepted, which clip shortens): an answer, not a
// dump of the material.
const maxReplyRunes = 180

// replyRunes is a text's length as maxReplyRunes measures it in a reply
// in the language zh says: its runes in Chinese, a third of them in
// another language (an English word with its space, some six runes, says
// about what two Chinese characters say), so an English reply is not held
// to a third of what a Chinese one may say.
func replyRunes(s string, zh bool) int {
	n := utf8.RuneCountInString(s)
	if zh {
		return n
	}
	return (n + 2) / 3
}

// isHeading reports whether a line names what follows rather than says
// something: a section path ("a > b"), or a short line that ends no
// sentence and has no clause punctuation.
func isHeading(line string) bool {
	if strings.Contains(line, " > ") {
		return true
	}
	if utf8.RuneCountInString(line) > 40 {
		return false
	}
	return !strings.ContainsAny(line, "。！？；，：.!?;,:")
}

// joinPath puts heading h under path: the document's title stays, a
// heading the path already ends with is not repeated.
func joinPath(path, h string) string {
	switch {
	case path == "":
		return h
	case strings.HasSuffix(path, h):
		return path
	}
	segs := strings.Split(path, " > ")
	if lb, ok := headingLabel(strings.TrimLeft(h, "# ")); ok {
		// A labelled heading follows the part of its kind it is a
		// sibling of ("Section 2" after "Article I > Section 1"), or
		// goes under the path.
		for j := len(segs) - 1; j >= 1; j-- {
			if sl, ok := headingLabel(strings.TrimLeft(segs[j], "# ")); ok && docstruct.SameKind(sl.Kind, lb.Kind) && (sl.Path == nil) == (lb.Path == nil) {
				return strings.Join(segs[:j], " > ") + " > " + h
			}
		}
		return path + " > " + h
	}
	return segs[0] + " > " + h
}

// withCite puts the citation [n] at the end of s, before its closing
// punctuation ("…利貞[1]。").
func withCite(s string, n int) string {
	if n <= 0 {
		return s
	}
	body := strings.TrimRightFunc(s, func(r rune) bool { return strings.ContainsRune("。！？；!?;.…”’\"'」』", r) })
	mark := "[" + itoaSmall(n) + "]"
	if last, _ := utf8.DecodeLastRuneInString(body); body != "" && (unicode.IsLetter(last) || unicode.IsDigit(last)) && !text.IsCJK(last) {
		mark = " " + mark
	}
	return body + mark + s[len(body):]
}

func itoaSmall(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoaSmall(n/10) + string(rune('0'+n%10))
}

// clip shortens a sentence longer than maxReplyRunes to the run of its
// clauses around the one that holds most of the question's characters (in
// Chinese) and words (stems, in English).
func clip(qr query, s string) string {
	const keep = 150
	if utf8.RuneCountInString(s) <= maxReplyRunes {
		return s
	}
	var clauses []string
	start := 0
	for i, r := range s {
		if strings.ContainsRune("，；：、,;:", r) {
			end := i + utf8.RuneLen(r)
			clauses = append(clauses, s[start:end])
			start = end
		}
	}
	if start < len(s) {
		clauses = append(clauses, s[start:])
	}
	best, bestScore := 0, -1
	for i, c := range clauses {
		score := 0
		for _, r := range c {
			if _, ok := qr.chars[text.FoldRune(r)]; ok {
				score++
			}
		}
		for _, t := range text.Terms(text.Fold(c)) {
			if _, ok := qr.words[t]; ok {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	lo, hi := best, best+1
	n := utf8.RuneCountInString(clauses[best])
	for {
		grown := false
		if hi < len(clauses) && n+utf8.RuneCountInString(clauses[hi]) <= keep {
			n += utf8.RuneCountInString(clauses[hi])
			hi++
			grown = true
		}
		if lo > 0 && n+utf8.RuneCountInString(clauses[lo-1]) <= keep {
			lo--
			n += utf8.RuneCountInString(clauses[lo])
			grown = true
		}
		if !grown {
			break
		}
	}
	out := strings.Join(clauses[lo:hi], "")
	if utf8.RuneCountInString(out) > maxReplyRunes {
		out = string([]rune(out)[:keep]) + "…"
	}
	return out
}

var (
	quoted     = regexp.MustCompile(`[「“"‘『']([^「」“”"‘’『』']{2,60})[」”"’』']`)
	asksSource = regexp.MustCompile(`出自|出处|来自|源自|语出|哪一篇|哪篇|哪部|哪本|哪一章|哪章|哪一条|哪条|哪一节|哪节|哪里`)
	// strictSource asks for a phrase's source and nothing else.
	strictSource = regexp.MustCompile(`出自|出处|语出|源自`)
	// unquotedSource asks where an unquoted phrase before it comes from.
	unquotedSource = regexp.MustCompile(`出自|出处|语出|源自`)
	// deixis ends an unquoted passage: "…这句话出自哪一章？", "…上述文字出自哪里？".
	deixis      = regexp.MustCompile(`[，,。\s]*(?:上面|上述|以上|前面)?(?:的)?(?:这一?句话?|这一?段话?|这段文字|这些文字|这些话|此句|此语|此段|文字|话|内容)$`)
	asksMeaning = regexp.MustCompile(`意思|含义|何意|意为|怎么理解|如何理解|解释|指什么`)
)

// readStructured answers a question whose form the material's structure
// settles: the source of a quoted phrase, or a named sub-part of a part
// named by a classifier (named.go).
// It returns false when the question has no such form or the material does
// not hold the answer; the generic reading then takes over. An empty reply
// with true means the material cannot answer that form.
func readStructured(q string, lines []ctxLine, nm *vocab) (string, bool) {
	if len(lines) == 0 {
		return "", false
	}
	if p, kind, ok := whereFromEnglish(q); ok {
		nq := foldNorm(p)
		for _, i := range hitLines(lines, nq) {
			if r := sayWhereFrom(p, lines, i, kind, false, false); r != "" {
				return r, true
			}
		}
	}
	fq := text.Fold(q)
	if r, ok := readQuote(fq, lines, nm); ok {
		return r, true
	}
	if nm == nil {
		return "", false
	}
	return nm.readNamed(fq, lines)
}

// foldNorm is the form lines and quotes are matched in: folded to
// simplified, letters and digits only.
func foldNorm(s string) string { return normalize(text.Fold(s)) }

// readQuote answers "「…」出自哪里/哪一篇？" with the source of the line that
// holds the quotation (wherefrom.go), and "「…」是什么意思？" with that line
// and the one after it.
func readQuote(fq string, lines []ctxLine, nm *vocab) (string, bool) {
	asksIn := func(s string) []int {
		if nm == nil {
			return nil
		}
		return nm.asksIn.FindStringIndex(s)
	}
	m := quoted.FindStringSubmatchIndex(fq)
	quotedMark := m != nil
	if m == nil {
		// "…出自哪一篇？": the phrase before the question of source,
		// unquoted.
		a := unquotedSource.FindStringIndex(fq)
		if a == nil {
			a = asksIn(fq) // "…是哪一<classifier>？"
		}
		if a == nil {
			return "", false
		}
		phrase := strings.TrimRightFunc(fq[:a[0]], func(r rune) bool { return !unicode.IsLetter(r) || strings.ContainsRune("是在为", r) })
		phrase = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(phrase, "请问"), "这句话"), "，, ")
		phrase = trimDeixis(phrase)
		if utf8.RuneCountInString(foldNorm(phrase)) < 4 {
			return "", false
		}
		i := strings.Index(fq, phrase)
		m = []int{i, i + len(phrase), i, i + len(phrase)}
	}
	quote := fq[m[2]:m[3]]
	nq := foldNorm(quote)
	if utf8.RuneCountInString(nq) < 2 {
		return "", false
	}
	rest := fq[:m[0]] + fq[m[1]:]
	hits := hitLines(lines, nq)
	if len(hits) == 0 {
		// Where a quoted phrase comes from is not said by a passage
		// without it: nothing found (rather than a sentence that shares
		// "出自"). An unquoted phrase may be a paraphrase: read on.
		return "", quotedMark && (strictSource.MatchString(rest) || asksIn(rest) != nil)
	}
	switch {
	case asksSource.MatchString(rest) || asksIn(rest) != nil:
		kind := askedKind(rest)
		for _, i := range hits { // a path with a part of the kind asked
			if r := sayWhereFrom(quote, lines, i, kind, true, true); r != "" {
				return r, true
			}
		}
		for _, i := range hits { // a part named by a classifier: in a file named for it
			l := lines[i]
			src := nm.sourceOf(l.path)
			if src == "" {
				continue
			}
			return "「" + quote + "」出自" + src + "：" + withCite(quoteSpan(l.text, nq, 0), l.cite), true
		}
		if r := sayWhereFrom(quote, lines, hits[0], kind, true, false); r != "" {
			return r, true
		}
		l := lines[hits[0]]
		return withCite(quoteSpan(l.text, nq, 0), l.cite), true
	case asksMeaning.MatchString(rest):
		// The sentence that holds the phrase and the one after it, which
		// in commentary text is what explains it.
		l := lines[hits[0]]
		return withCite(quoteSpan(l.text, nq, 1), l.cite), true
	}
	return "", false
}

// quoteSpan is the sentence of line that holds the normalised quote nq,
// with up to more sentences after it (within maxReplyRunes); the line when
// the quote spans sentences.
func quoteSpan(line, nq string, more int) string {
	ss := text.Sentences(line)
	for i, s := range ss {
		if !strings.Contains(foldNorm(s), nq) {
			continue
		}
		out := s
		for j := i + 1; j < len(ss) && j <= i+more && utf8.RuneCountInString(out)+utf8.RuneCountInString(ss[j]) <= maxReplyRunes; j++ {
			out = join(out, ss[j])
		}
		return out
	}
	return line
}

// sourceOf names the part by a classifier that a line with this section
// path is in, by the profiles' names ("NAME<classifier>（heading or file）"),
// or "".
func (nm *vocab) sourceOf(path string) string {
	if nm == nil {
		return ""
	}
	if name, _ := nm.partName(path); name != "" {
		return name + nm.classifier() + "（" + lastSegment(path) + "）"
	}
	return ""
}

func lastSegment(path string) string {
	if i := strings.LastIndex(path, " > "); i >= 0 {
		return path[i+3:]
	}
	return path
}
