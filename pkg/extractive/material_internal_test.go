package extractive

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// TestPassageCitesEachSentence: a passage without sections (a web page's
// excerpt) is read sentence by sentence, each sentence carrying the
// passage's citation before its closing punctuation.
func TestPassageCitesEachSentence(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"是故易有太极，是生两仪。两仪生四象！", 2, "是故易有太极，是生两仪[2]。|两仪生四象[2]！"},
		{"子曰：“书不尽言，言不尽意。”\n天行健", 1, "子曰：“书不尽言，言不尽意[1]。”|天行健[1]"},
		{"The two forms produce the four images. Then eight trigrams?", 3, "The two forms produce the four images [3].|Then eight trigrams [3]?"},
		{"……", 1, ""},
		{"天行健。", 0, "天行健。"},
	}
	for _, c := range cases {
		_, lines, _ := appendPassage(nil, nil, llm.Evidence{ID: c.n, Text: c.in}, 0)
		var got []string
		for i, l := range lines {
			got = append(got, l.text)
			if l.entry != i || l.path != "" {
				t.Errorf("%q: line %d is %+v, want an entry of its own", c.in, i, l)
			}
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("passage %q cited %d: %q, want %q", c.in, c.n, strings.Join(got, "|"), c.want)
		}
	}
}
