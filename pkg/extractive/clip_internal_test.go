package extractive

import (
	"strings"
	"testing"
)

// TestClipKeepsTheAskedClause: a sentence too long for a reply is cut to
// the clauses around the one that holds the question's words (stems, in
// English), not to its first clause.
func TestClipKeepsTheAskedClause(t *testing.T) {
	for _, tt := range []struct{ q, s, want, not string }{
		{
			q: "How are the non-alcoholic drinks there?",
			s: "Additionally, I was happy to see that the menu offers a wide range of dishes for every taste and budget, " +
				"and in addition to the usual wines and the specialty cocktails you would find at most places in the centre of town, " +
				"they also had a large selection of non-alcoholic drinks that were fresh and cold.",
			want: "non-alcoholic drinks", not: "Additionally",
		},
	} {
		got := clip(newQuery(tt.q), tt.s)
		if !strings.Contains(got, tt.want) || strings.Contains(got, tt.not) {
			t.Errorf("clip(%q) = %q: want it to hold %q, not %q", tt.q, got, tt.want, tt.not)
		}
	}
}
