// Package text holds the language handling every retriever in mixchat shares:
// splitting text into sentences and into index terms that work for Chinese and
// English alike, a small lexical similarity built on those terms, and the
// Splitter that cuts documents and web pages into chunks at sentence,
// paragraph and heading boundaries.
//
// Chinese has no spaces, so runs of CJK characters become overlapping
// character bigrams (the CJK bigram scheme of Lucene's CJKAnalyzer), plus the
// lone character when a run is one character long. Latin text becomes
// lower-cased words with Lucene's English stop words removed and a Porter2
// (Snowball) stem. The same function feeds BM25, the offline embedder, the
// offline model's sentence ranking and memory retrieval, so a term means the
// same thing everywhere.
package text

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopwords is Lucene's English stop set (EnglishAnalyzer's default), the one
// the published BM25 baselines use.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true,
	"but": true, "by": true, "for": true, "if": true, "in": true, "into": true, "is": true,
	"it": true, "no": true, "not": true, "of": true, "on": true, "or": true, "such": true,
	"that": true, "the": true, "their": true, "then": true, "there": true, "these": true,
	"they": true, "this": true, "to": true, "was": true, "will": true, "with": true,
}

// IsCJK reports whether r is a Han, Hiragana, Katakana or Hangul character.
// The two common answers are small enough to be inlined where it is
// called, once per rune of long texts.
func IsCJK(r rune) bool {
	switch {
	case r < 0x1100: // below Hangul Jamo, the first of the four scripts
		return false
	case r >= 0x4E00 && r <= 0x9FFF: // CJK Unified Ideographs, all Han
		return true
	}
	return isCJKTable(r)
}

// isCJKTable is IsCJK read from the Unicode tables.
func isCJKTable(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// CountLetters counts the letters of s: CJK characters (IsCJK) and the
// other letters.
func CountLetters(s string) (cjk, other int) {
	for _, r := range s {
		switch {
		case IsCJK(r):
			cjk++
		case unicode.IsLetter(r):
			other++
		}
	}
	return cjk, other
}

// Terms returns the index terms of s in order of appearance (duplicates kept):
// CJK bigrams and stemmed, stop-word-free Latin words, full-width digits and
// letters read as ASCII (Narrow). It never returns punctuation.
func Terms(s string) []string {
	out := make([]string, 0, len(s)/3)
	var word []rune
	var cjk []rune
	flushWord := func() {
		if len(word) == 0 {
			return
		}
		w := strings.ToLower(string(word))
		word = word[:0]
		w = strings.Trim(w, "'")
		if w == "" || stopwords[w] {
			return
		}
		if isASCIIAlpha(w) {
			w = stemCached(w)
		}
		out = append(out, w)
	}
	flushCJK := func() {
		switch len(cjk) {
		case 0:
			return
		case 1:
			out = append(out, string(cjk))
		default:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range s {
		switch {
		case IsCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' && len(word) > 0):
			flushCJK()
			word = append(word, Narrow(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

// Narrow returns the ASCII form of a full-width ASCII character (the
// digits, letters and signs of U+FF01–U+FF5E: "１９７９" is "1979",
// "ＡＢＣ" "ABC") and any other rune unchanged. Chinese text writes numbers
// and Latin names in either width; Terms reads them as one.
func Narrow(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E {
		return r - 0xFEE0
	}
	return r
}

// Chars returns the CJK characters of s one by one, and its Latin words as
// Terms does. It is a finer-grained view for short texts, where a bigram may
// be too strict (a question and its answer share characters more often than
// bigrams).
func Chars(s string) []string {
	var out []string
	for _, t := range Terms(s) {
		r, _ := utf8.DecodeRuneInString(t)
		if !IsCJK(r) {
			out = append(out, t)
		}
	}
	for _, r := range s {
		if IsCJK(r) {
			out = append(out, string(r))
		}
	}
	return out
}

func isASCIIAlpha(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// sentenceEnd reports whether r closes a sentence in Chinese or English.
func sentenceEnd(r rune) bool {
	switch r {
	case '。', '！', '？', '；', '!', '?', ';', '…':
		return true
	}
	return false
}

// closer reports whether r may follow a sentence end and belongs to it
// (closing quotes and brackets).
func closer(r rune) bool {
	switch r {
	case '”', '’', '"', '\'', '」', '』', '）', ')', '】', '》':
		return true
	}
	return false
}

// Sentences splits s into sentences at Chinese and English sentence ends
// (。！？；!?; and a period followed by space or end) and at line breaks. Each
// sentence keeps its closing punctuation and trailing quotes; surrounding
// white space is trimmed and empty sentences are dropped. The sentences of
// valid UTF-8 are slices of s.
func Sentences(s string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			if out == nil {
				out = make([]string, 0, 4)
			}
			out = append(out, t)
		}
		start = end
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return sentenceRunes(s) // not valid UTF-8
		case r == '\n':
			emit(i + n)
		case sentenceEnd(r) || (r == '.' && periodEnds(s[i+n:]) && !abbrevBefore(s[start:i])):
			for n < len(s)-i {
				r, m := utf8.DecodeRuneInString(s[i+n:])
				if !sentenceEnd(r) && !closer(r) && r != '.' {
					break
				}
				n += m
			}
			emit(i + n)
		}
		i += n
	}
	emit(len(s))
	return out
}

// periodEnds reports whether a period followed by rest ends a sentence
// (unless it ends an abbreviation): at the end, before space or a closer.
func periodEnds(rest string) bool {
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || unicode.IsSpace(r) || closer(r)
}

// abbrevBefore is abbrev of the text before a period.
func abbrevBefore(before string) bool {
	i := len(before)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(before[:i])
		if unicode.IsSpace(r) {
			break
		}
		i -= n
	}
	w := strings.ToLower(before[i:])
	switch w {
	case "dr", "mr", "mrs", "ms", "prof", "st", "vs", "e.g", "i.e", "etc", "fig", "no", "al":
		return true
	}
	first, _ := utf8.DecodeRuneInString(before[i:])
	return utf8.RuneCountInString(w) == 1 && unicode.IsUpper(first)
}

// sentenceRunes is Sentences of text that is not valid UTF-8, read rune
// by rune: each invalid byte is a U+FFFD of its sentence.
func sentenceRunes(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	emit := func(end int) {
		if t := strings.TrimSpace(string(rs[start:end])); t != "" {
			out = append(out, t)
		}
		start = end
	}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\n':
			emit(i + 1)
		case sentenceEnd(r) || (r == '.' && (i+1 == len(rs) || unicode.IsSpace(rs[i+1]) || closer(rs[i+1])) && !abbrev(rs[start:i])):
			j := i + 1
			for j < len(rs) && (sentenceEnd(rs[j]) || closer(rs[j]) || rs[j] == '.') {
				j++
			}
			emit(j)
			i = j - 1
		}
	}
	emit(len(rs))
	return out
}

// abbrev reports whether the word before a period is a common abbreviation
// or a single letter (an initial), so "Dr. Smith" and "e.g. this" stay whole.
func abbrev(before []rune) bool {
	i := len(before)
	for i > 0 && !unicode.IsSpace(before[i-1]) {
		i--
	}
	w := strings.ToLower(string(before[i:]))
	switch w {
	case "dr", "mr", "mrs", "ms", "prof", "st", "vs", "e.g", "i.e", "etc", "fig", "no", "al":
		return true
	}
	return utf8.RuneCountInString(w) == 1 && unicode.IsUpper([]rune(string(before[i:]))[0])
}

// Vector is a sparse term-frequency vector.
type Vector map[string]float64

// Count returns the term frequencies of terms.
func Count(terms []string) Vector {
	v := make(Vector, len(terms))
	for _, t := range terms {
		v[t]++
	}
	return v
}

// Cosine returns the cosine similarity of a and b, in [0,1] for
// non-negative vectors, and 0 when either is empty.
func Cosine(a, b Vector) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	var dot, na, nb float64
	for t, x := range a {
		dot += x * b[t]
		na += x * x
	}
	if dot == 0 { // most pairs share no term: b's norm is not needed
		return 0
	}
	for _, y := range b {
		nb += y * y
	}
	return dot / math.Sqrt(na*nb)
}

// Similarity is the lexical similarity of two texts: the cosine of their term
// vectors.
func Similarity(a, b string) float64 {
	return Cosine(Count(Terms(a)), Count(Terms(b)))
}
