package memory

import "github.com/mixchat/mixchat/pkg/llm"

// History turns stored turns into chat messages in order: each turn's
// question, then its answer as the user saw it (for an interrupted reply,
// the part that was sent).
func History(turns []Turn) []llm.Message {
	out := make([]llm.Message, 0, 2*len(turns))
	for _, t := range turns {
		if t.Question.Content != "" {
			out = append(out, llm.Message{Role: llm.RoleUser, Content: t.Question.Content})
		}
		if t.Answer.Content != "" {
			out = append(out, llm.Message{Role: llm.RoleAssistant, Content: t.Answer.Content})
		}
	}
	return out
}
