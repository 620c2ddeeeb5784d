package mix

import (
	"testing"

	"github.com/mixchat/mixchat/pkg/rag"
)

// TestRenumber: an answer's [k] becomes the turn's sources list's
// [offset+k]; a marker naming none of its sources is dropped.
func TestRenumber(t *testing.T) {
	tests := []struct {
		text      string
		offset, n int
		want      string
	}{
		{"甲[1]。乙[2]。", 0, 2, "甲[1]。乙[2]。"},
		{"甲[1]。乙[2]。", 3, 2, "甲[4]。乙[5]。"},
		{"It opens at nine [1].", 2, 1, "It opens at nine [3]."},
		{"It opens at nine [2].", 2, 1, "It opens at nine."},
		{"甲[1]。", 0, 0, "甲。"},
		{"see a[x] and [1000]", 1, 3, "see a[x] and [1000]"},
	}
	for _, tt := range tests {
		if got := renumber(tt.text, tt.offset, tt.n); got != tt.want {
			t.Errorf("renumber(%q, %d, %d) = %q, want %q", tt.text, tt.offset, tt.n, got, tt.want)
		}
	}
	offs := sourceOffsets([]Outcome{{From: rag.LLM}, {From: rag.KB, Sources: make([]rag.Source, 3)}, {From: rag.Search}})
	if offs[rag.KB] != 0 || offs[rag.Search] != 3 {
		t.Errorf("sourceOffsets = %v, want kb 0, search 3", offs)
	}
}
