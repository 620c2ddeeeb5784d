package text

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The words of chat messages and questions: the index terms of a message
// (Terms with possessives dropped and chat shorthand spelled out), the
// terms of a question, whole-word matching, and the small readings of a
// message that memory's retrieval and the offline readers share.

// possessive matches an English possessive 's ("Caroline's").
var possessive = regexp.MustCompile(`([\p{L}\p{N}])['’]s\b`)

// ChatTerms returns the index terms of a message: Terms after dropping
// possessive 's, so "Caroline's" matches "Caroline", with chat
// shorthand spelled out ("fav" is "favorite").
func ChatTerms(s string) []string {
	ts := Terms(DropPossessives(s))
	for i, t := range ts {
		if full, ok := shorthand[t]; ok {
			ts[i] = full
		}
	}
	return ts
}

// DropPossessives is s with English possessive 's dropped ("Sala Thong's
// beer" → "Sala Thong beer"), so the name's terms are those of the name
// alone.
func DropPossessives(s string) string {
	if !strings.Contains(s, "'s") && !strings.Contains(s, "’s") {
		return s
	}
	return possessive.ReplaceAllString(s, "$1")
}

// shorthand maps the terms of common English chat shorthand to those of
// the words they stand for.
var shorthand = map[string]string{}

func init() {
	for _, p := range [][2]string{{"fav", "favorite"}, {"fave", "favorite"}, {"favs", "favorites"}, {"gf", "girlfriend"},
		{"bf", "boyfriend"}, {"bday", "birthday"}, {"biz", "business"}, {"convo", "conversation"}, {"vacay", "vacation"},
		{"pic", "picture"}, {"pics", "pictures"}, {"bro", "brother"}, {"sis", "sister"}, {"thx", "thanks"},
		{"info", "information"}, {"approx", "approximately"}, {"hubby", "husband"}, {"kiddos", "kids"}, {"doc", "doctor"}} {
		short, full := Terms(p[0]), Terms(p[1])
		if len(short) == 1 && len(full) == 1 && short[0] != full[0] {
			shorthand[short[0]] = full[0]
		}
	}
}

// questionStop are words that say a sentence is a question, or refer to the
// speakers, rather than what it is about: dropped from retrieval queries
// (they are not in Terms' stop list, which is for documents).
var questionStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what when where who whom whose which why how did do does done is are was were be been
		has have had i you he she we me my your his her our us they them it its can could would should shall may
		might about from any some kind type also ever get got go went like thing things tell know say said`) {
		questionStop[w] = true
		for _, t := range Terms(w) {
			questionStop[t] = true
		}
	}
	// Chinese question words and function bigrams.
	for _, w := range strings.Fields(`什么 怎么 怎样 如何 为什 为何 哪里 哪些 哪个 哪儿 是否 是不 不是 请问 告诉 一下 吗 呢 吧 么 我们 你们 他们 她们 我的 你的 知道 可以 能否 有没 没有 还是`) {
		questionStop[w] = true
	}
}

// IsQuestionWord reports whether the term t (of Terms) is one of the words
// that say a sentence is a question or refer to the speakers ("do", "you",
// "know", "什么"), which QuestionTerms leaves out, or one that makes it a
// request ("please", "whether", "I'd", "confirm").
func IsQuestionWord(t string) bool { return questionStop[t] || requestStop[t] }

// requestStop are the words of asking someone to tell or do something,
// which say nothing of what is asked about.
var requestStop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`please whether i'd i'm i'll i've let wonder wondering verify confirm`) {
		for _, t := range Terms(w) {
			requestStop[t] = true
		}
	}
}

// QuestionTerms returns the retrieval terms of a question: ChatTerms without
// question words; all of ChatTerms if nothing else is left.
func QuestionTerms(q string) []string {
	all := ChatTerms(q)
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

// MostlyCJK reports whether s has more CJK characters than Latin letters.
func MostlyCJK(s string) bool {
	cjk, latin := 0, 0
	for _, r := range s {
		switch {
		case IsCJK(r):
			cjk++
		case r < unicode.MaxASCII && unicode.IsLetter(r):
			latin++
		}
	}
	return cjk > 0 && cjk*3 >= latin
}

// Words splits s into Latin words (letters, digits, apostrophes) and single
// CJK characters, in order, keeping case.
func Words(s string) []string {
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
		case IsCJK(r):
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

// AllCJK reports whether s is not empty and all CJK characters.
func AllCJK(s string) bool {
	for _, r := range s {
		if !IsCJK(r) {
			return false
		}
	}
	return s != ""
}

// ContainsWord reports whether s contains w as a whole word
// (case-insensitive for Latin; as a substring for CJK).
func ContainsWord(s, w string) bool {
	if w == "" {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(w); IsCJK(r) {
		return strings.Contains(s, w)
	}
	return WordIndex(s, w) >= 0
}

// WordIndex returns the byte offset in s of the first whole-word occurrence
// of w, case-insensitive (case-sensitive when lower-casing would change the
// text's length, so that offsets stay those of s), or -1.
func WordIndex(s, w string) int {
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
		if !IsWordRune(before) && !IsWordRune(after) {
			return j
		}
		i = j + 1
	}
}

// IsWordRune reports whether r is a letter or a digit (of a word).
func IsWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// FirstPerson reports whether s speaks of its speaker (I, my, me, 我).
func FirstPerson(s string) bool {
	if strings.Contains(s, "我") {
		return true
	}
	for _, w := range Words(s) {
		switch strings.ToLower(w) {
		case "i", "my", "me", "mine", "myself", "i'm", "i've", "i'd", "i'll":
			return true
		}
	}
	return false
}

// Truncate cuts s to at most n runes, adding "…" when cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return strings.TrimSpace(string(rs[:n])) + "…"
}

// ProperNouns returns, lower-cased, the capitalised words of an English
// message that do not start a sentence ("we went to Rome with Anna" →
// rome, anna), leaving out I and its contractions: the names a question
// asking where, who or which is after.
func ProperNouns(s string) []string {
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

// quotePairs are the quotation marks around a passage a question quotes
// ("「依照本法第九条」出自哪里？", `Which section says "…"?`): what they hold is
// text to find as it is written. Book-title marks 《》 are not among them.
var quotePairs = [][2]rune{{'「', '」'}, {'『', '』'}, {'“', '”'}, {'"', '"'}, {'‘', '’'}}

// Unquoted is q with the passages it quotes blanked out, each character a
// space; an opening mark never closed quotes nothing.
func Unquoted(q string) string {
	rs := []rune(q)
	for _, p := range quotePairs {
		for i := 0; i < len(rs); i++ {
			if rs[i] != p[0] {
				continue
			}
			j := i + 1
			for j < len(rs) && rs[j] != p[1] {
				j++
			}
			if j == len(rs) {
				break // not closed: no passage
			}
			for k := i; k <= j; k++ {
				rs[k] = ' '
			}
			i = j
		}
	}
	return string(rs)
}
