package extractive

import (
	"math"
	"slices"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// charVec is the term vector of a sentence's CJK characters and Latin
// words (text.Count(text.Chars(s))) with its terms numbered: the numbers
// in increasing order, their counts, and the sum of the counts' squares.
// The counts are whole numbers, so every sum is exact and cosine is
// text.Cosine's to the last bit, without a map per sentence.
type charVec struct {
	ids    []int32
	counts []float64
	norm   float64
}

// cosine is text.Cosine of the two vectors.
func (a charVec) cosine(b charVec) float64 {
	if len(a.ids) == 0 || len(b.ids) == 0 {
		return 0
	}
	var dot float64
	for i, j := 0, 0; i < len(a.ids) && j < len(b.ids); {
		switch {
		case a.ids[i] < b.ids[j]:
			i++
		case a.ids[i] > b.ids[j]:
			j++
		default:
			dot += a.counts[i] * b.counts[j]
			i++
			j++
		}
	}
	if dot == 0 {
		return 0
	}
	return dot / math.Sqrt(a.norm*b.norm)
}

// charVecs builds the vectors of one reading's candidates, each once,
// numbering their terms as they come; candidates of the same text share
// a vector.
type charVecs struct {
	byIndex []*charVec
	byText  map[string]*charVec
	words   map[string]int32
	chars   map[rune]int32
	ids     []int32 // scratch
}

func newCharVecs(n int) *charVecs {
	return &charVecs{byIndex: make([]*charVec, n), byText: map[string]*charVec{}, words: map[string]int32{}, chars: map[rune]int32{}}
}

// of returns the vector of candidate i, whose text is s.
func (cv *charVecs) of(i int, s string) charVec {
	if v := cv.byIndex[i]; v != nil {
		return *v
	}
	v, ok := cv.byText[s]
	if !ok {
		v = cv.build(s)
		cv.byText[s] = v
	}
	cv.byIndex[i] = v
	return *v
}

func (cv *charVecs) build(s string) *charVec {
	ids := cv.ids[:0]
	for _, t := range text.Terms(s) {
		if r, _ := utf8.DecodeRuneInString(t); text.IsCJK(r) {
			continue
		}
		id, ok := cv.words[t]
		if !ok {
			id = int32(len(cv.words) + len(cv.chars))
			cv.words[t] = id
		}
		ids = append(ids, id)
	}
	for _, r := range s {
		if !text.IsCJK(r) {
			continue
		}
		id, ok := cv.chars[r]
		if !ok {
			id = int32(len(cv.words) + len(cv.chars))
			cv.chars[r] = id
		}
		ids = append(ids, id)
	}
	cv.ids = ids
	slices.Sort(ids)
	v := &charVec{}
	for k := 0; k < len(ids); {
		n := k + 1
		for n < len(ids) && ids[n] == ids[k] {
			n++
		}
		c := float64(n - k)
		v.ids = append(v.ids, ids[k])
		v.counts = append(v.counts, c)
		v.norm += c * c
		k = n
	}
	return v
}
