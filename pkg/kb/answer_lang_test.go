package kb

import (
	"testing"
	"unicode"
)

// TestRequestInTheQuestionLanguage: with no prompt named, a question in
// English gets the English prompts (found and nothing found), so the model
// is not told to answer in Chinese.
func TestRequestInTheQuestionLanguage(t *testing.T) {
	results := []Result{{Chunk: Chunk{File: "leave.md", Text: "Employees get ten sick days a year."}, KnowledgeBase: "hr", Relevance: 0.9}}
	for _, rs := range [][]Result{results, nil} {
		req, _, _, err := Request(ChatRequest{Query: "How many sick days do employees get?"}, rs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range req.Messages {
			for _, r := range m.Content {
				if unicode.Is(unicode.Han, r) {
					t.Errorf("%d results: the prompt for an English question has Chinese:\n%s", len(rs), m.Content)
					break
				}
			}
		}
	}
}
