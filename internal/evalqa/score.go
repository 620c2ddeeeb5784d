package evalqa

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/text"
)

// Normalize is the form replies and gold answers are compared in: letters
// and digits only (punctuation, spaces and citation marks such as "[1]"
// dropped), full-width forms narrowed, traditional Chinese folded to
// simplified, lower case.
func Normalize(s string) string {
	s = citationMark.ReplaceAllString(s, "")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
			r -= 0xFEE0
		case r == 0x3000:
			r = ' '
		}
		r = text.FoldRune(r)
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

var citationMark = regexp.MustCompile(`\[\d{1,3}\]`)

// ContainsGold reports whether reply holds one of the gold answers (after
// Normalize) and is at most MaxAnswerChars long.
func ContainsGold(reply string, gold []string) bool {
	return utf8.RuneCountInString(reply) <= MaxAnswerChars && holds(reply, gold)
}

// holds reports whether s holds one of the gold answers (after Normalize).
func holds(s string, gold []string) bool {
	n := Normalize(s)
	for _, g := range gold {
		if g := Normalize(g); g != "" && strings.Contains(n, g) {
			return true
		}
	}
	return false
}

// refusals are the phrases of a reply that declines to answer: the offline
// model's and the strict prompt's.
var refusals = []string{
	"没有找到与问题相关的信息",
	"根据已知信息无法回答",
	"Nothing in the given context is relevant",
	"cannot be answered from the known information",
}

// SaysAbsent reports whether a reply rests only on the knowledge base's
// statements that what the question names is not in it (rag.MatchAbsent:
// "知识库中没有《…》", a part a document does not have): the reply declines
// to answer, in words that name what is missing rather than a fixed phrase.
func SaysAbsent(rs []kb.Result) bool {
	for _, r := range rs {
		if r.Match != rag.MatchAbsent {
			return false
		}
	}
	return len(rs) > 0
}

// IsRefusal reports whether a reply declines to answer.
func IsRefusal(reply string) bool {
	if strings.TrimSpace(reply) == "" {
		return true
	}
	for _, p := range refusals {
		if strings.Contains(reply, p) {
			return true
		}
	}
	return false
}
