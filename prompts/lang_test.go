package prompts

import "testing"

func TestForQuestion(t *testing.T) {
	for _, tt := range []struct {
		group, name, question, want string
	}{
		{"knowledge_base_chat", "", "What is the leave policy?", "en"},
		{"knowledge_base_chat", "default", "What is the leave policy?", "en"},
		{"knowledge_base_chat", "", "年假有几天？", ""},
		{"knowledge_base_chat", "", "What does 年假 mean?", ""},
		{"knowledge_base_chat", "empty", "What is the leave policy?", "empty"},
		{"search_engine_chat", "", "Who won?", "en"},
		{"llm_chat", "", "Hello", ""}, // no English template: kept
	} {
		if got := ForQuestion(tt.group, tt.name, tt.question); got != tt.want {
			t.Errorf("ForQuestion(%s, %q, %q) = %q, want %q", tt.group, tt.name, tt.question, got, tt.want)
		}
	}
}
