package rag

import (
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
)

// minPiece is the fewest tokens worth keeping of a passage cut to fit a
// budget; a smaller remainder is left out.
const minPiece = 40

// FitEvidence returns the leading texts that fit in budget tokens
// (llm.Estimate), in order, the last one cut at a rune boundary when it
// does not fit whole (and left out when less than a few dozen tokens of
// it would fit). The first text is always kept, cut if need be. budget 0
// or less keeps everything.
func FitEvidence(texts []string, budget int) []string {
	if budget <= 0 {
		return texts
	}
	out := make([]string, 0, len(texts))
	left := budget
	for i, t := range texts {
		n := llm.Estimate(t)
		if n <= left {
			out = append(out, t)
			left -= n
			continue
		}
		if i > 0 && left < minPiece {
			break
		}
		out = append(out, cut(t, left))
		break
	}
	return out
}

// cut returns the longest prefix of t whose estimate is at most tokens,
// ending with "…".
func cut(t string, tokens int) string {
	lo, hi := 0, utf8.RuneCountInString(t)
	rs := []rune(t)
	for lo < hi { // the longest prefix that fits
		mid := (lo + hi + 1) / 2
		if llm.Estimate(string(rs[:mid])) < tokens {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return strings.TrimRightFunc(string(rs[:lo]), func(r rune) bool { return r == ' ' || r == '\n' }) + "…"
}

// FitEach is FitEvidence over items that hold their texts: the leading
// items whose texts (text) fit in budget tokens, the last one's cut to
// fit (written back with setText on a copy); budget 0 or less keeps them
// all.
func FitEach[T any](items []T, budget int, text func(T) string, setText func(*T, string)) []T {
	if budget <= 0 {
		return items
	}
	texts := make([]string, len(items))
	for i, it := range items {
		texts[i] = text(it)
	}
	fit := FitEvidence(texts, budget)
	out := make([]T, len(fit))
	for i, t := range fit {
		out[i] = items[i]
		setText(&out[i], t)
	}
	return out
}
