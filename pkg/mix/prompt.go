package mix

import (
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// PromptData is what the mix_chat templates see.
type PromptData struct {
	Persona  string // who the model speaks as
	Question string // the question as asked
	// Standalone is the question rewritten to stand alone; "" when it was
	// not rewritten.
	Standalone string
	// Context is the compressed context of the conversation the rewrite
	// produced; when empty and the history was not condensed (or
	// mix.answerer_history is "all"), Dialog holds the history itself.
	Context string
	Dialog  []llm.Message
	// Answers are the answers to fuse ("answers" mode), numbered from 1.
	Answers []PromptAnswer
	// KB and Web are the knowledge-base chunks and web passages ("context"
	// mode), numbered from 1 across both.
	KB  []PromptPassage
	Web []PromptPassage
}

// PromptAnswer is one answer shown to the fusion prompt.
type PromptAnswer struct {
	N       int
	From    string // "llm", "kb", "search": the template labels it
	Text    string
	Sources []rag.Source
}

// PromptPassage is one piece of evidence shown to the context prompt.
type PromptPassage struct {
	N     int
	Title string
	URL   string
	Text  string
}

func (m *Mixer) promptData(q rag.Query, res *Result) PromptData {
	d := PromptData{Persona: m.cfg.Persona, Question: strings.TrimSpace(q.Text), Standalone: res.Standalone, Context: strings.TrimSpace(res.Context)}
	if d.Context == "" && (!res.Condensed || m.cfg.AnswererHistory == HistoryAll) {
		for _, msg := range q.History {
			if c := strings.TrimSpace(msg.Content); c != "" {
				d.Dialog = append(d.Dialog, llm.Message{Role: msg.Role, Content: c})
			}
		}
	}
	return d
}
