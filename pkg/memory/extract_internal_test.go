package memory

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// TestModelTriplesGrounded: a model's triples that the conversation does
// not state — the prompt's example line echoed back — are dropped.
func TestModelTriplesGrounded(t *testing.T) {
	said := linesText([]Line{{Role: llm.RoleUser, Text: "I live in Hangzhou and I like tea."}})
	for _, tt := range []struct {
		subj, obj string
		want      bool
	}{
		{"user", "Hangzhou", true},
		{"user", "tea", true},
		{"user", "the Zhouyi", false}, // the example of memory_triples
		{"Li Lei", "Hangzhou", false},
	} {
		if got := grounded(tt.subj, said) && grounded(tt.obj, said); got != tt.want {
			t.Errorf("grounded(%q, %q) = %v, want %v", tt.subj, tt.obj, got, tt.want)
		}
	}
}

// TestMergeEntities: repeated facts are dropped, and only the most
// recently mentioned entities and their last facts are kept.
func TestMergeEntities(t *testing.T) {
	facts := []EntityFact{
		{Name: "user", Fact: "Human: My teacher Wang Fang lives in Xi'an."},
		{Name: "Wang Fang", Fact: "Human: My teacher Wang Fang lives in Xi'an."},
		{Name: "Xi'an", Fact: "Human: My teacher Wang Fang lives in Xi'an."},
		{Name: "wang fang", Fact: "Human: My teacher Wang Fang lives in Xi'an."},
	}
	merged := mergeEntities(nil, facts, 1, 2, 1)
	if len(merged) != 2 {
		t.Fatalf("mergeEntities kept %d entities, want 2: %+v", len(merged), merged)
	}
	for _, e := range merged {
		if len(e.Facts) != 1 {
			t.Errorf("%s has %d facts, want 1", e.Name, len(e.Facts))
		}
	}
}
