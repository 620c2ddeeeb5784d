package kb

import (
	"context"
	"strings"
	"testing"
)

// TestChatNotesCoverage: three one-line notes in one base, asked at the
// default settings through knowledge-base chat with the offline model.
// Each note answers a question that names its subject and what is asked,
// though the question words it by words the note does not use (品种 of a
// note that says 波斯猫); questions about what no note says, or that mix
// one note's subject with another's fact, are refused.
func TestChatNotesCoverage(t *testing.T) {
	ctx := context.Background()
	s := newHashKB(t, "notes", offlineModels())
	mustAdd(t, s, "notes",
		FileData{Name: "birthday.txt", Data: []byte("李雷的生日是三月五日。")},
		FileData{Name: "school.txt", Data: []byte("韩梅梅在北京大学读化学专业。")},
		FileData{Name: "cat.txt", Data: []byte("小白是一只三岁的波斯猫，喜欢吃鱼。")},
	)
	for _, tt := range []struct{ q, want string }{
		{"小白是什么品种的猫？", "波斯猫"},
		{"李雷的生日是哪天？", "三月五日"},
		{"韩梅梅读什么专业？", "化学"},
		{"小白喜欢吃什么？", "鱼"},
		{"小白是什么品种的猫", "波斯猫"}, // without the question mark
		// want "": refused.
		{"小白的主人是谁？", ""},
		{"韩梅梅的生日是哪天？", ""},
		{"波斯猫原产于哪里？", ""},
		{"量子计算机的原理是什么？", ""},
	} {
		reply, err := s.Chat(ctx, ChatRequest{Query: tt.q, KnowledgeBases: []string{"notes"}, MinRelevance: s.DefaultMinRelevance()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "" {
			if !reply.Empty {
				t.Errorf("%s → %q (best relevance %.3f): want a refusal", tt.q, reply.Text, reply.BestRelevance)
			}
			continue
		}
		if reply.Empty || !strings.Contains(reply.Text, tt.want) {
			t.Errorf("%s → %q (empty %v, best relevance %.3f, threshold %.3f): want %q",
				tt.q, reply.Text, reply.Empty, reply.BestRelevance, reply.MinRelevance, tt.want)
		}
	}
}

// TestCoverage: a question's terms held by a chunk, against those it
// misses, a missed term counting less when no chunk of the base holds it
// (in a small base).
func TestCoverage(t *testing.T) {
	known := map[string]bool{"a": true, "b": true, "c": true}
	tests := []struct {
		name    string
		q       []string
		has     map[string]bool
		unknown float64
		want    float64
	}{
		{"all held", []string{"a", "b"}, map[string]bool{"a": true, "b": true}, 0.5, 1},
		{"none held", []string{"a", "b"}, map[string]bool{"c": true}, 0.5, 0},
		{"a known term missed", []string{"a", "b"}, map[string]bool{"a": true}, 0.5, 0.5},
		{"an unknown term missed, small base", []string{"a", "x"}, map[string]bool{"a": true}, 0.5, 1 / 1.5},
		{"an unknown term missed, large base", []string{"a", "x"}, map[string]bool{"a": true}, 1, 0.5},
	}
	for _, tt := range tests {
		if got := coverage(tt.q, tt.has, known, tt.unknown); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s: coverage %v, want %v", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int
		want float64
	}{{3, 0.5}, {10, 0.5}, {100, 0.75}, {1000, 1}, {5000, 1}} {
		if got := unknownWeight(tt.n); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("unknownWeight(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}
