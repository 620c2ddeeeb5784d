package memory

import (
	"slices"
	"strings"
)

// What memory keeps of extracted facts and triples: whether a model's
// reply is grounded in what was said, and the merging of new triples.
// linesText is the lower-cased text of lines, for grounding checks.
func linesText(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.ToLower(l.Text))
		b.WriteByte('\n')
	}
	return b.String()
}

// grounded reports whether the name or phrase s occurs in said (the
// lower-cased conversation), "user" always does, and a phrase most of
// whose terms occur counts.
func grounded(s, said string) bool {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == UserLabel || s == "" {
		return s != ""
	}
	if strings.Contains(said, s) {
		return true
	}
	return groundedTerms(s, said)
}

// groundedTerms reports whether at least half of the words of s (CJK:
// characters) occur in said as words.
func groundedTerms(s, said string) bool {
	ws := words(strings.ToLower(s))
	slices.Sort(ws)
	ws = slices.Compact(ws)
	if len(ws) == 0 {
		return false
	}
	in := 0
	for _, w := range ws {
		if containsWord(said, w) {
			in++
		}
	}
	return 2*in >= len(ws)
}

// mergeTriples appends ts to old, dropping repeats and keeping the last max.
func mergeTriples(old, ts []Triple, maxTriples int) []Triple {
	out := slices.Clone(old)
	seen := map[string]bool{}
	key := func(t Triple) string {
		return strings.ToLower(t.Subject + "\x00" + t.Relation + "\x00" + t.Object)
	}
	for _, t := range out {
		seen[key(t)] = true
	}
	for _, t := range ts {
		if t.Subject == "" || t.Relation == "" || t.Object == "" || seen[key(t)] {
			continue
		}
		seen[key(t)] = true
		out = append(out, t)
	}
	if len(out) > maxTriples {
		out = slices.Clone(out[len(out)-maxTriples:])
	}
	return out
}
