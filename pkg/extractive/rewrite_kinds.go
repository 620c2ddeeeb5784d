package extractive

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/memory"
)

// Referents that the documents make known: "the museum" is the last
// thing named that a document says is a museum (Named.Kind), and
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
// written together or apart ("book shop", "bookshop").
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
	// "which one", "which of these options": a choice among them.
	enWhichOf = regexp.MustCompile(`(?i)\b(which)\s+(?:one|place|of\s+(?:(?:these|those)(?:\s+\pL+s\b)?|them|the\s+(?:two|three|four|\pL+s)))\b`)
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
		loc = enWhichOf.FindStringSubmatchIndex(q)
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
	case "which":
		rep = q[loc[2]:loc[3]] + " of " + list
	}
	return q[:loc[0]] + rep + q[loc[1]:], true
}

// Bounds of a kind's phrase.
const (
	maxKindWords    = 4
	maxKindCJKRunes = 6
)

var (
	// reIsA is "X is a K"; reField a field line naming the subject's
	// kind; reZhIsA "X是一家K".
	reIsA   = regexp.MustCompile(`(?im)(?:^|[.!?;]\s+)[ \t>*_-]*(?:the\s+)?([^\n.!?;]{1,80}?)\s+(?:is|are|was|were)\s+(?:a|an|the)\s+([^.,;:!?\n]{1,60})`)
	reField = regexp.MustCompile(`(?im)^[ \t>*_-]*(?:category|type|kind)\s*[:：]\s*([^\n]{1,60})$`)
	reZhIsA = regexp.MustCompile(`(?m)(?:^|[。！？；])\s*([^\n，。！？；]{1,20}?)是一(?:家|个|座|所|间|位|部|本|种|只)(\p{Han}{1,6}?)[，。；,;\s]`)
	// kindEnd are words that end a kind's phrase ("a museum in the
	// centre").
	kindEnd = map[string]bool{"in": true, "on": true, "at": true, "with": true, "that": true, "which": true, "who": true, "near": true,
		"located": true, "for": true, "of": true, "serving": true, "offering": true, "and": true, "where": true, "from": true, "by": true,
		"whose": true, "formed": true, "founded": true, "based": true, "known": true, "released": true, "written": true, "directed": true}
)

// KindIn is what a text says the thing named by one of names is, lower
// case, "" when it does not say: the last word of "X is a K" ("Efes is a
// turkish bakery in the centre" → "bakery"), a category, type or
// kind field, "X是一家K".
func KindIn(s string, names []string) string {
	isName := func(x string) bool {
		x = strings.TrimSpace(strings.Trim(x, "*_`#"))
		for _, n := range names {
			if n != "" && strings.EqualFold(strings.TrimPrefix(strings.ToLower(x), "the "), strings.TrimPrefix(strings.ToLower(n), "the ")) {
				return true
			}
		}
		return false
	}
	for _, m := range reIsA.FindAllStringSubmatch(s, -1) {
		if !isName(m[1]) {
			continue
		}
		var ws []string
		for _, w := range strings.Fields(strings.ToLower(m[2])) {
			if kindEnd[w] {
				break
			}
			ws = append(ws, strings.Trim(w, `"'()`))
		}
		if len(ws) > 0 && len(ws) <= maxKindWords {
			return ws[len(ws)-1]
		}
	}
	if m := reField.FindStringSubmatch(s); m != nil {
		if ws := strings.Fields(strings.ToLower(m[1])); len(ws) > 0 && len(ws) <= maxKindWords {
			return strings.Join(ws, " ")
		}
	}
	for _, m := range reZhIsA.FindAllStringSubmatch(s, -1) {
		if isName(m[1]) && utf8.RuneCountInString(m[2]) <= maxKindCJKRunes {
			return m[2]
		}
	}
	return ""
}

// saidKind replaces "the K", "this K" or "that K" in q by ent when the
// conversation says ent is a K ("INXS were an Australian rock band":
// "Did the band tour?" → "Did INXS tour?"). It reports false otherwise.
func saidKind(f memory.FollowUp, q, ent string) (string, bool) {
	var texts []string
	for _, h := range recentMessages(f.History, 6) {
		texts = append(texts, h.Content)
	}
	if k := KindIn(strings.Join(texts, "\n"), []string{ent}); k != "" {
		if loc := kindPhrase(k).FindStringIndex(q); loc != nil {
			return q[:loc[0]] + ent + q[loc[1]:], true
		}
	}
	return q, false
}
