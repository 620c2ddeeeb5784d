package text

import (
	"strings"
	"unicode/utf8"
)

//go:generate go run gen_fold.go

// foldExtra holds pairs, laid out as foldPairs, that the generated table
// leaves out because Unihan lists the traditional character as its own
// simplified form too, though simplified text writes it otherwise: 復 is
// written 复 and 遯 遁 (as in 恢复 and 遁世).
const foldExtra = "復复遯遁"

// foldMap maps a traditional Chinese character to its simplified form.
var foldMap = func() map[rune]rune {
	m := make(map[rune]rune, utf8.RuneCountInString(foldPairs+foldExtra)/2)
	var prev rune = -1
	for _, r := range foldPairs + foldExtra {
		if prev < 0 {
			prev = r
			continue
		}
		m[prev] = r
		prev = -1
	}
	return m
}()

// foldLow is the first rune foldMap may hold.
const foldLow = 0x3400

// foldBMP has bit r−foldLow set for each rune of the Basic Multilingual
// Plane that foldMap holds: most Chinese characters are their own
// simplified form, and a bit is cheaper to read than the map.
var foldBMP = func() *[(0x10000 - foldLow + 63) / 64]uint64 {
	var b [(0x10000 - foldLow + 63) / 64]uint64
	for r := range foldMap {
		if r < foldLow {
			panic("text: a fold below foldLow")
		}
		if r <= 0xFFFF {
			i := r - foldLow
			b[i>>6] |= 1 << (i & 63)
		}
	}
	return &b
}()

// FoldRune returns the simplified form of a traditional Chinese character,
// and any other rune unchanged.
func FoldRune(r rune) rune {
	if r < foldLow {
		return r
	}
	if i := r - foldLow; r <= 0xFFFF && foldBMP[i>>6]&(1<<(i&63)) == 0 {
		return r
	}
	return foldMapped(r)
}

// foldMapped is FoldRune of a rune foldMap may hold.
func foldMapped(r rune) rune {
	if s, ok := foldMap[r]; ok {
		return s
	}
	return r
}

// Fold maps traditional Chinese characters in s to their simplified forms
// (貞 → 贞, 辭 → 辞, 龍 → 龙), character by character, so text written in
// either script yields the same terms. The map is the Unicode Han Database's
// kSimplifiedVariant (2,751 characters) plus foldExtra (復, 遯); other
// characters that are also their own simplified form (乾, 著) are left
// alone, and so is everything that is not Chinese. It is a folding for matching, not a conversion for display:
// it knows no words, so one-to-many simplifications are not disambiguated.
func Fold(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if FoldRune(r) != r {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		b.WriteRune(FoldRune(r))
	}
	return b.String()
}
