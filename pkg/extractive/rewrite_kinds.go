package extractive

import (
	"regexp"
	"strings"
	"sync"

	"github.com/mixchat/mixchat/pkg/memory"
)

// Referents that the documents make known: "the restaurant" is the last
// thing named that a document says is a restaurant (Named.Kind), and
// "either of these" asks of each of the things the last turn named.

// kindReferent replaces "the K", "this K" or "that K" in q, where K is
// what a document says a thing named in the recent turns is, by the last
// such thing named. It reports false when q names a thing itself or no
// such phrase is found.
func (st *rwState) kindReferent(f memory.FollowUp, q string) (string, bool) {
	if st.docs == nil || len(st.docs.Named(q)) > 0 {
		return "", false
	}
	for _, h := range recentMessages(f.History, 6) {
		for _, n := range st.docs.Named(h.Content) {
			if n.Kind == "" {
				continue
			}
			if loc := kindPhrase(n.Kind).FindStringIndex(q); loc != nil {
				return q[:loc[0]] + displayName(n) + q[loc[1]:], true
			}
		}
	}
	return "", false
}

// kindPhrase matches "the", "this" or "that" before kind, its words
// written together or apart ("guest house", "guesthouse").
func kindPhrase(kind string) *regexp.Regexp {
	if re, ok := kindPhraseREs.Load(kind); ok {
		return re.(*regexp.Regexp)
	}
	var ws []string
	for _, w := range strings.Fields(kind) {
		ws = append(ws, regexp.QuoteMeta(w))
	}
	re := regexp.MustCompile(`(?i)\b(?:the|this|that)\s+` + strings.Join(ws, `\s*`) + `\b`)
	kindPhraseREs.Store(kind, re)
	return re
}

var kindPhraseREs sync.Map

// Phrases speaking of several things at once.
var (
	// "either of these", "both of them", "any of the three".
	enSeveralOf = regexp.MustCompile(`(?i)\b(either|both|each|any|neither|none|all)\s+of\s+(?:(?:these|those)(?:\s+\pL+s\b)?|them|the\s+(?:two|three|four|\pL+s))\b`)
	// "they both", "these two".
	enSeveralPron = regexp.MustCompile(`(?i)\b(?:they|them|these|those)\s+(both|all|two|three)\b`)
)

// severalReferent replaces a phrase speaking of several things ("either
// of these", "they both") by the things the latest turn naming two or
// more of them names: "Does either of these have parking?" → "Does A or B
// have parking?". It reports false when q has no such phrase or no recent
// turn names several things.
func (st *rwState) severalReferent(f memory.FollowUp, q string) (string, bool) {
	if st.docs == nil {
		return "", false
	}
	loc := enSeveralOf.FindStringSubmatchIndex(q)
	if loc == nil {
		loc = enSeveralPron.FindStringSubmatchIndex(q)
	}
	if loc == nil {
		return "", false
	}
	var names []string
	for _, h := range recentMessages(f.History, 2) {
		seen := map[string]bool{}
		names = names[:0]
		for _, n := range st.docs.Named(h.Content) {
			if !seen[n.Name] {
				seen[n.Name] = true
				names = append(names, displayName(n))
			}
		}
		if len(names) >= 2 {
			break
		}
	}
	if len(names) < 2 {
		return "", false
	}
	word := strings.ToLower(q[loc[2]:loc[3]])
	joiner := " or "
	switch word {
	case "both", "each", "all", "two", "three":
		joiner = " and "
	}
	list := strings.Join(names[:len(names)-1], ", ") + joiner + names[len(names)-1]
	rep := list
	switch word {
	case "both", "all":
		if loc[2] > loc[0] { // "they both": the word stays after the names
			rep = list + " " + q[loc[2]:loc[3]]
		}
	}
	return q[:loc[0]] + rep + q[loc[1]:], true
}
