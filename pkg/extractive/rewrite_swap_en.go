package extractive

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/text"
)

// English follow-ups that name only what changes ("What about Golden
// Wok?" after "When does La Margherita open?") stand for the previous
// question asked of the new name: the rewrite is that question with the
// conversation's subject replaced, as swapEllipsisZH does in Chinese.

// reWhatAbout matches "What about X?", "How about X?", "And X?".
var reWhatAbout = regexp.MustCompile(`(?i)^\s*(?:(?:and\s+)?(?:what|how)\s+about|and)\s+(?:the\s+)?([^?.!,]{2,60}?)\s*\??\s*$`)

// swapEllipsisEN rewrites "What about X?" as the previous user question
// (made standalone) with its subject replaced by X, when X is a known name
// (isKnownName) and the previous question names the subject. It reports
// false otherwise.
func (st *rwState) swapEllipsisEN(f memory.FollowUp, q string) (string, bool) {
	vocab := st.vocab
	m := reWhatAbout.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	x := strings.TrimSpace(m[1])
	// A name as the other rules take one: capitalised, or of several
	// words in lower-cased text.
	if r := []rune(x); len(r) == 0 || !unicode.IsUpper(r[0]) && !strings.Contains(x, " ") || !isKnownName(vocab, x) {
		return "", false
	}
	prev, at := lastUserQuestion(f.History)
	if prev == "" || text.MostlyCJK(prev) || asksBeyond(prev) {
		return "", false
	}
	prev = st.standaloneAt(f, at)
	if !strings.HasSuffix(strings.TrimSpace(prev), "?") || text.ContainsWord(prev, x) {
		return "", false
	}
	ent := st.referentEN(memory.FollowUp{Topic: f.Topic, History: f.History})
	if ent == "" || !text.ContainsWord(prev, ent) {
		return "", false
	}
	return replaceWord(prev, ent, x), true
}

// isKnownName reports whether x is, whole, a name of vocab (a knowledge
// base's name, title or heading): "What about Golden Wok?" swaps the
// subject, "What about the South?" asks something else.
func isKnownName(vocab Vocabulary, x string) bool {
	if vocab == nil {
		return false
	}
	for _, n := range vocab.NamesIn(x) {
		if strings.EqualFold(n, x) {
			return true
		}
	}
	return false
}

// replaceWord replaces the first whole-word occurrence of w in s (case
// insensitive) by r.
func replaceWord(s, w, r string) string {
	j := text.WordIndex(s, w)
	if j < 0 {
		return s
	}
	return s[:j] + r + s[j+len(w):]
}
