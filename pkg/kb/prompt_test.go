package kb

import (
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/internal/golden"
	"github.com/mixchat/mixchat/pkg/llm"
)

// TestPromptGolden renders each knowledge_base_chat template through
// Request, as the answerer does, and compares it with its golden file.
func TestPromptGolden(t *testing.T) {
	results := []Result{
		{Chunk: Chunk{File: "zhouyi.txt", Text: "乾，元亨，利貞。"}, KnowledgeBase: "zhouyi", Relevance: 0.8},
		{Chunk: Chunk{File: "zhouyi.txt", Text: "《象》曰：天行健，君子以自強不息。"}, KnowledgeBase: "zhouyi", Relevance: 0.6},
	}
	tests := []struct {
		golden  string
		prompt  string
		results []Result
		query   string
		empty   bool
	}{
		{"default", "", results, "乾卦的卦辞是什么？", false},
		{"en", "en", results, "What is the judgement of Qian?", false},
		{"empty", "", nil, "乾卦的卦辞是什么？", true},
		{"empty_en", "en", nil, "What is the judgement of Qian?", true},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			req, g, empty, err := Request(ChatRequest{Query: tt.query, PromptName: tt.prompt, History: []llm.Message{{Role: llm.RoleUser, Content: "上一问"}}}, tt.results)
			if err != nil {
				t.Fatal(err)
			}
			if empty != tt.empty {
				t.Errorf("empty = %v", empty)
			}
			// The grounding: the chunks, numbered as the prompt numbers
			// them, for the strict prompt; the history for the empty one.
			if g.Question != tt.query || (tt.empty && (len(g.History) != 1 || len(g.Evidence) != 0)) ||
				(!tt.empty && (len(g.History) != 0 || len(g.Evidence) != len(tt.results) || g.Evidence[0].ID != 1 || g.Evidence[0].Path == "")) {
				t.Errorf("grounding %+v", g)
			}
			if len(req.Messages) != 2 || req.Messages[0].Content != "上一问" {
				t.Errorf("history goes first as its own message: %+v", req.Messages)
			}
			got := req.Messages[len(req.Messages)-1].Content
			golden.Check(t, filepath.Join("testdata", "prompts", tt.golden+".golden"), got)
		})
	}
	if _, _, _, err := Request(ChatRequest{Query: "q", PromptName: "nope"}, results); err == nil {
		t.Error("an unknown prompt name must fail")
	}
}
