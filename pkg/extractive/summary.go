package extractive

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// Summarizer is the offline summarizer (memory.Summarizer): it keeps
// sentences, never writes any (extractiveSummary). It calls no model.
type Summarizer struct{ tokens llm.TokenCounter }

// NewSummarizer returns the offline summarizer counting tokens with
// tokens (nil: llm.Estimate), as the memory it serves counts them.
func NewSummarizer(tokens llm.TokenCounter) *Summarizer { return &Summarizer{tokens: tokens} }

// Summarize returns the sentences of prev and lines that carry the most
// information, within maxTokens. It never fails.
func (s *Summarizer) Summarize(ctx context.Context, prev string, lines []memory.Line, maxTokens int) (string, error) {
	return extractiveSummary(prev, lines, maxTokens, func(x string) int { return countTokens(s.tokens, x) }), nil
}

// extractiveSummary is the offline progressive summary: the sentences of
// the previous summary and the new lines that carry the most information,
// within maxTokens, in their original order, one per line with its
// speaker's label.
//
// A sentence's weight is the sum over its distinct terms of 1 + ln(df),
// df being the number of candidate sentences sharing the term (terms the
// conversation keeps returning to are its topics), divided by its length,
// then raised for first-person statements (what people say about
// themselves), names and numbers and sentences already in the summary, and
// lowered for questions and fragments. Near-duplicates of a chosen sentence
// are skipped.
func extractiveSummary(prev string, lines []memory.Line, maxTokens int, count func(string) int) string {
	type cand struct {
		text  string
		terms []string
		score float64
		pos   int
	}
	var cs []cand
	// add takes a candidate line and its body (the line without its
	// speaker label); bodies of fewer than two terms ("Hi!", "OK.") carry
	// nothing worth keeping.
	add := func(s, body string, bonus float64) {
		s = strings.TrimSpace(s)
		terms := distinct(text.ChatTerms(body))
		if s == "" || len(terms) < 2 {
			return
		}
		cs = append(cs, cand{text: s, terms: terms, score: bonus, pos: len(cs)})
	}
	for _, l := range memory.SummaryLines(prev) {
		add(l.String(), l.Text, 1.2)
	}
	for _, l := range lines {
		for _, s := range text.Sentences(l.Text) {
			bonus := 1.0
			body := s
			if endsAsQuestion(body) {
				bonus *= 0.5
			} else if l.Entity() != "" && text.FirstPerson(body) {
				bonus *= 1.6
			}
			if hasNameOrNumber(body) {
				bonus *= 1.3
			}
			add(l.Label()+": "+s, body, bonus)
		}
	}
	if len(cs) == 0 {
		return ""
	}
	df := map[string]int{}
	for _, c := range cs {
		for _, t := range c.terms {
			df[t]++
		}
	}
	for i := range cs {
		c := &cs[i]
		if len(c.terms) < 3 {
			c.score *= 0.3
		}
		var w float64
		for _, t := range c.terms {
			w += 1 + math.Log(float64(df[t]))
		}
		c.score *= w / (4 + float64(count(c.text))*0.25)
	}
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cs[order[a]].score > cs[order[b]].score })
	var chosen []int
	used := 0
	for _, i := range order {
		n := count(cs[i].text) + 1
		if used+n > maxTokens {
			continue
		}
		dup := false
		for _, j := range chosen {
			if text.Cosine(text.Count(cs[i].terms), text.Count(cs[j].terms)) > 0.8 {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		chosen = append(chosen, i)
		used += n
	}
	sort.Ints(chosen)
	out := make([]string, len(chosen))
	for k, i := range chosen {
		out[k] = cs[i].text
	}
	return strings.Join(out, "\n")
}

func distinct(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// endsAsQuestion reports whether s ends as a question does (?, ？, 吗,
// 呢, before closing quotes).
func endsAsQuestion(s string) bool {
	s = strings.TrimRight(strings.TrimSpace(s), `"'”’)）`)
	return strings.HasSuffix(s, "?") || strings.HasSuffix(s, "？") || strings.HasSuffix(s, "吗") || strings.HasSuffix(s, "呢")
}

// hasNameOrNumber reports whether s has a digit, a capitalised word after
// its first, or a quoted title.
func hasNameOrNumber(s string) bool {
	if strings.ContainsAny(s, "0123456789《「“") {
		return true
	}
	ws := text.Words(s)
	for i, w := range ws {
		if i > 0 && w != "I" && startsUpper(w) {
			return true
		}
	}
	return false
}

func startsUpper(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}
