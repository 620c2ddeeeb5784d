package memory

import (
	"regexp"
	"slices"
	"unicode"

	"github.com/mixchat/mixchat/pkg/text"
)

// Language handling of memory retrieval and extraction, on top of
// text.Terms (CJK bigrams, stemmed English words).

// The words of messages, from pkg/text.
func docTerms(s string) []string    { return text.ChatTerms(s) }
func queryTerms(q string) []string  { return text.QuestionTerms(q) }
func isCJKText(s string) bool       { return text.MostlyCJK(s) }
func words(s string) []string       { return text.Words(s) }
func containsWord(s, w string) bool { return text.ContainsWord(s, w) }
func firstPerson(s string) bool     { return text.FirstPerson(s) }
func properNouns(s string) []string { return text.ProperNouns(s) }

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

// numberWord matches a count in a message ("3", "two", "twice").
var numberWord = regexp.MustCompile(`(?i)\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twice|once|several|couple)\b|[一二两三四五六七八九十几]+\s*[个次年只位本]`)

// reAsksName matches questions asking for a place, person or named thing
// ("Where…", "Who…", "Which city…").
var reAsksName = regexp.MustCompile(`(?i)^\s*(?:where|who|whom|whose|which)\b|(?:^|\s)(?:in|at|to|from) (?:what|which) (?:city|country|state|place|town)\b`)

// reAsksCount matches questions asking how many or how often.
var reAsksCount = regexp.MustCompile(`(?i)^\s*how (?:many|often|much)\b|多少|几次|几个`)
