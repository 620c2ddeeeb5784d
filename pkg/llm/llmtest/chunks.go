package llmtest

import (
	"unicode"

	"github.com/mixchat/mixchat/pkg/text"
)

// Chunks splits text into the pieces a streamed reply sends: each CJK
// character or punctuation mark alone, each Latin word (or number) with the
// spaces that follow it. Joined, the pieces give text back.
func Chunks(s string) []string {
	rs := []rune(s)
	word := func(i int) bool {
		if i < 0 || i >= len(rs) {
			return false
		}
		r := rs[i]
		if r == '\'' || r == '’' {
			return i > 0 && i+1 < len(rs) && isWordRune(rs[i-1]) && isWordRune(rs[i+1])
		}
		return isWordRune(r)
	}
	var out []string
	start := 0
	for i := 0; i < len(rs); i++ {
		if unicode.IsSpace(rs[i]) {
			continue // only leading spaces get here: they join the first piece
		}
		if word(i) && word(i+1) {
			continue
		}
		end := i + 1
		for end < len(rs) && unicode.IsSpace(rs[end]) {
			end++
		}
		out = append(out, string(rs[start:end]))
		start = end
		i = end - 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !text.IsCJK(r)
}
