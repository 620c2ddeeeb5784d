package memory

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// Language handling of memory retrieval and extraction, on top of
// text.Terms (CJK bigrams, stemmed English words).

// possessive matches an English possessive 's ("Caroline's").
var possessive = regexp.MustCompile(`([\p{L}\p{N}])['’]s\b`)

// docTerms returns the index terms of a message: text.Terms after dropping
// possessive 's, so "Caroline's" matches "Caroline", with chat
// shorthand spelled out ("fav" is "favorite").
func docTerms(s string) []string {
	if strings.Contains(s, "'s") || strings.Contains(s, "’s") {
		s = possessive.ReplaceAllString(s, "$1")
	}
	ts := text.Terms(s)
	for i, t := range ts {
		if full, ok := shorthand[t]; ok {
			ts[i] = full
		}
	}
	return ts
}

// shorthand maps the terms of common English chat shorthand to those of
// the words they stand for.
var shorthand = map[string]string{}

func init() {
	for _, p := range [][2]string{{"fav", "favorite"}, {"fave", "favorite"}, {"favs", "favorites"}, {"gf", "girlfriend"},
		{"bf", "boyfriend"}, {"bday", "birthday"}, {"biz", "business"}, {"convo", "conversation"}, {"vacay", "vacation"},
		{"pic", "picture"}, {"pics", "pictures"}, {"bro", "brother"}, {"sis", "sister"}, {"thx", "thanks"},
		{"info", "information"}, {"approx", "approximately"}, {"hubby", "husband"}, {"kiddos", "kids"}, {"doc", "doctor"}} {
		short, full := text.Terms(p[0]), text.Terms(p[1])
		if len(short) == 1 && len(full) == 1 && short[0] != full[0] {
			shorthand[short[0]] = full[0]
		}
	}
}

// questionStop are words that say a sentence is a question, or refer to the
// speakers, rather than what it is about: dropped from retrieval queries
// (they are not in text.Terms' stop list, which is for documents).
var questionStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what when where who whom whose which why how did do does done is are was were be been
		has have had i you he she we me my your his her our us they them it its can could would should shall may
		might about from any some kind type also ever get got go went like thing things tell know say said`) {
		questionStop[w] = true
		for _, t := range text.Terms(w) {
			questionStop[t] = true
		}
	}
	// Chinese question words and function bigrams.
	for _, w := range strings.Fields(`什么 怎么 怎样 如何 为什 为何 哪里 哪些 哪个 哪儿 是否 是不 不是 请问 告诉 一下 吗 呢 吧 么 我们 你们 他们 她们 我的 你的 知道 可以 能否 有没 没有 还是`) {
		questionStop[w] = true
	}
}

// queryTerms returns the retrieval terms of a question: docTerms without
// question words; all of docTerms if nothing else is left.
func queryTerms(q string) []string {
	all := docTerms(q)
	out := make([]string, 0, len(all))
	for _, t := range all {
		if !questionStop[t] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// isCJKText reports whether s has more CJK characters than Latin letters.
func isCJKText(s string) bool {
	cjk, latin := 0, 0
	for _, r := range s {
		switch {
		case text.IsCJK(r):
			cjk++
		case r < unicode.MaxASCII && unicode.IsLetter(r):
			latin++
		}
	}
	return cjk > 0 && cjk*3 >= latin
}

// wordCount counts words the way the word trigger does: Latin words plus CJK
// characters.
func wordCount(s string) int {
	n := 0
	inWord := false
	for _, r := range s {
		switch {
		case text.IsCJK(r):
			n++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if !inWord {
				n++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return n
}

// words splits s into Latin words (letters, digits, apostrophes) and single
// CJK characters, in order, keeping case.
func words(s string) []string {
	var out []string
	var w []rune
	flush := func() {
		if len(w) > 0 {
			out = append(out, strings.Trim(string(w), "'’"))
			w = w[:0]
		}
	}
	for _, r := range s {
		switch {
		case text.IsCJK(r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || ((r == '\'' || r == '’') && len(w) > 0):
			w = append(w, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// containsWord reports whether s contains w as a whole word
// (case-insensitive for Latin; as a substring for CJK).
func containsWord(s, w string) bool {
	if w == "" {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(w); text.IsCJK(r) {
		return strings.Contains(s, w)
	}
	return wordIndex(s, w) >= 0
}

// wordIndex returns the byte offset in s of the first whole-word occurrence
// of w, case-insensitive (case-sensitive when lower-casing would change the
// text's length, so that offsets stay those of s), or -1.
func wordIndex(s, w string) int {
	ls, lw := strings.ToLower(s), strings.ToLower(w)
	if len(ls) != len(s) || len(lw) != len(w) {
		ls, lw = s, w
	}
	for i := 0; ; {
		j := strings.Index(ls[i:], lw)
		if j < 0 {
			return -1
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(ls[:j])
		after, _ := utf8.DecodeRuneInString(ls[j+len(lw):])
		if !isWordRune(before) && !isWordRune(after) {
			return j
		}
		i = j + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// firstPerson reports whether s speaks of its speaker (I, my, me, 我).
func firstPerson(s string) bool {
	if strings.Contains(s, "我") {
		return true
	}
	for _, w := range words(s) {
		switch strings.ToLower(w) {
		case "i", "my", "me", "mine", "myself", "i'm", "i've", "i'd", "i'll":
			return true
		}
	}
	return false
}

// truncateRunes cuts s to at most n runes, adding "…" when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return strings.TrimSpace(string(rs[:n])) + "…"
}

// withPairs appends to terms each pair of adjacent terms ("pride parade"
// → "pride parade" as one term), so a message that has the question's
// words side by side outranks one that has them apart.
func withPairs(terms []string) []string {
	out := slices.Clip(terms)
	for i := 1; i < len(terms); i++ {
		out = append(out, terms[i-1]+" "+terms[i])
	}
	return out
}

// properNouns returns, lower-cased, the capitalised words of an English
// message that do not start a sentence ("we went to Rome with Anna" →
// rome, anna), leaving out I and its contractions: the names a question
// asking where, who or which is after.
func properNouns(s string) []string {
	var out []string
	start := true // at the start of a sentence
	for i, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' }) {
		core := strings.TrimLeft(w, `"'“‘([`)
		if r, _ := utf8.DecodeRuneInString(core); !start && i > 0 && unicode.IsUpper(r) {
			word := strings.ToLower(strings.TrimRight(core, `.,!?;:"'”’)]`))
			word = strings.TrimSuffix(strings.TrimSuffix(word, "'s"), "’s")
			if word != "i" && !strings.HasPrefix(word, "i'") && !strings.HasPrefix(word, "i’") && word != "" {
				out = append(out, word)
			}
		}
		start = strings.ContainsAny(w[len(w)-1:], ".!?:")
	}
	return out
}

// numberWord matches a count in a message ("3", "two", "twice").
var numberWord = regexp.MustCompile(`(?i)\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twice|once|several|couple)\b|[一二两三四五六七八九十几]+\s*[个次年只位本]`)

// reAsksName matches questions asking for a place, person or named thing
// ("Where…", "Who…", "Which city…").
var reAsksName = regexp.MustCompile(`(?i)^\s*(?:where|who|whom|whose|which)\b|(?:^|\s)(?:in|at|to|from) (?:what|which) (?:city|country|state|place|town)\b`)

// reAsksCount matches questions asking how many or how often.
var reAsksCount = regexp.MustCompile(`(?i)^\s*how (?:many|often|much)\b|多少|几次|几个`)
