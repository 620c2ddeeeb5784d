package search

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitPassages(t *testing.T) {
	para := strings.Repeat("天行健，君子以自强不息。", 10) // 120 characters, 10 sentences
	in := para + "\n" + para + "\n" + strings.Repeat("长", 130)
	ps := splitPassages(in, 50)
	if len(ps) < 6 {
		t.Fatalf("%d passages: %q", len(ps), ps)
	}
	var joined strings.Builder
	for i, p := range ps {
		if n := utf8.RuneCountInString(p); n > 50 {
			t.Errorf("passage %d has %d characters, limit 50: %q", i, n, p)
		}
		if !strings.HasSuffix(p, "。") && !strings.HasPrefix(p, "长") {
			t.Errorf("passage %d does not end on a sentence: %q", i, p)
		}
		joined.WriteString(strings.ReplaceAll(p, "\n", ""))
	}
	if want := strings.ReplaceAll(in, "\n", ""); joined.String() != want {
		t.Errorf("passages lose or repeat text:\n%q\nwant\n%q", joined.String(), want)
	}
}

func TestRankPassages(t *testing.T) {
	docs := [][]string{
		{"天尊地卑，乾坤定矣。", "是故易有太极，是生两仪。"},
		{"两仪生四象，四象生八卦。", "天行健，君子以自强不息。"},
	}
	got := rankPassages("易有太極 兩儀", docs, 2) // traditional question, simplified text
	if len(got) != 2 || got[0].Doc != 0 || got[0].Pos != 1 || got[1].Doc != 1 || got[1].Pos != 0 || got[0].Score <= got[1].Score {
		t.Errorf("ranked %+v", got)
	}
	if all := rankPassages("量子", docs, 0); len(all) != 4 || all[0].Score != 0 || all[0].Doc != 0 || all[0].Pos != 0 {
		t.Errorf("no match: %+v, want all four in document order with score 0", all)
	}
}
