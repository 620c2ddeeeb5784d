package rag_test

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

func TestFitEvidence(t *testing.T) {
	long := strings.Repeat("乾元亨利贞。", 50) // 300 tokens
	for _, tt := range []struct {
		name   string
		texts  []string
		budget int
		want   []int // the runes kept of each text; -1: whole
	}{
		{"no limit", []string{long, long}, 0, []int{-1, -1}},
		{"all fit", []string{"乾。", "坤。"}, 10, []int{-1, -1}},
		{"the second cut", []string{long, long}, 400, []int{-1, 100}},
		{"too little left for the second", []string{long, long}, 320, []int{-1}},
		{"the first cut", []string{long, "坤。"}, 100, []int{100}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := rag.FitEvidence(tt.texts, tt.budget)
			if len(got) != len(tt.want) {
				t.Fatalf("kept %d texts, want %d", len(got), len(tt.want))
			}
			total := 0
			for i, g := range got {
				total += llm.Estimate(g)
				if tt.want[i] < 0 && g != tt.texts[i] {
					t.Errorf("text %d changed: %q", i, g)
				}
				if tt.want[i] >= 0 && (!strings.HasSuffix(g, "…") || !strings.HasPrefix(tt.texts[i], strings.TrimSuffix(g, "…"))) {
					t.Errorf("text %d = %q, want a prefix cut with …", i, g)
				}
			}
			if tt.budget > 0 && total > tt.budget {
				t.Errorf("kept %d tokens, over the budget of %d", total, tt.budget)
			}
		})
	}
}

// TestFitEach: items keep their other fields; the texts are fitted as
// FitEvidence fits them.
func TestFitEach(t *testing.T) {
	type item struct {
		id   int
		text string
	}
	long := strings.Repeat("evidence ", 200)
	items := []item{{1, "short"}, {2, long}, {3, "left out"}}
	got := rag.FitEach(items, 60, func(i item) string { return i.text }, func(i *item, s string) { i.text = s })
	if len(got) != 2 || got[0] != items[0] || got[1].id != 2 || len(got[1].text) >= len(long) || items[1].text != long {
		t.Errorf("FitEach = %+v (the items not changed: %v)", got, items[1].text == long)
	}
	if all := rag.FitEach(items, 0, func(i item) string { return i.text }, func(i *item, s string) { i.text = s }); len(all) != 3 {
		t.Errorf("budget 0 keeps %d items, want 3", len(all))
	}
}
