// Package chat is the LLM-chat answerer: the model's own knowledge, with the
// conversation's history as the memory strategy recalled it.
package chat

import (
	"context"
	"fmt"
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/prompts"
)

// PromptGroup is the prompts/ group of the LLM-chat templates.
const PromptGroup = "llm_chat"

// Options are the answerer's defaults, used where a query leaves a field
// zero.
type Options struct {
	// PromptName is the template used when the query has history and names
	// none; "with_history" is the design's conversation prompt.
	PromptName  string
	Temperature *float32
	MaxTokens   int
}

// Answerer answers from the model's own knowledge and the history.
type Answerer struct {
	models llm.Models
	opts   Options
}

// New returns an answerer over models.
func New(models llm.Models, opts Options) *Answerer {
	if opts.PromptName == "" {
		opts.PromptName = "with_history"
	}
	return &Answerer{models: models, opts: opts}
}

var _ rag.Answerer = (*Answerer)(nil)

// promptData is what the llm_chat templates see.
type promptData struct {
	Input   string // the question
	History string // the history as "Human: ...\nAI: ..." lines
}

// Speaker prefixes of the transcript the with_history prompt carries.
const (
	humanPrefix = "Human: "
	aiPrefix    = "AI: "
)

// Transcript renders messages as the "Human: ... / AI: ..." lines of the
// design's conversation prompt; system messages come first as plain lines.
func Transcript(history []llm.Message) []string {
	lines := make([]string, 0, len(history))
	for _, m := range history {
		content := strings.TrimSpace(m.Content)
		if content == "" {
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			lines = append(lines, humanPrefix+content)
		case llm.RoleAssistant:
			lines = append(lines, aiPrefix+content)
		default:
			lines = append(lines, content)
		}
	}
	return lines
}

// Request builds the model request for q. With history and no prompt name,
// the answerer's template ("with_history", the design's conversation
// prompt) renders the transcript and question as one user message, after the
// history's system messages. A named template that does not carry the
// transcript (such as "default") gets the history as separate messages before
// it. Without history, the template "default" (or q.PromptName) renders the
// question alone.
func (a *Answerer) Request(q rag.Query) (llm.Request, error) {
	name := q.PromptName
	var dialog []llm.Message
	var system []llm.Message
	for _, m := range q.History {
		if m.Role == llm.RoleSystem {
			system = append(system, m)
		} else {
			dialog = append(dialog, m)
		}
	}
	if name == "" {
		name = "default"
		if len(dialog) > 0 {
			name = a.opts.PromptName
		}
	}
	lines := Transcript(dialog)
	text, err := prompts.Render(PromptGroup, name, promptData{Input: q.Text, History: strings.Join(lines, "\n")})
	if err != nil {
		return llm.Request{}, err
	}
	msgs := append([]llm.Message{}, system...)
	if len(lines) > 0 && !strings.Contains(text, lines[len(lines)-1]) {
		// The template does not carry the transcript (e.g. "default"):
		// send the history as messages of their own, as chat models expect.
		msgs = append(msgs, dialog...)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: text})
	req := llm.Request{
		Model:       q.Model,
		Messages:    msgs,
		Temperature: a.opts.Temperature,
		MaxTokens:   a.opts.MaxTokens,
		// The extractive model cannot resolve "那九二呢？" against the
		// transcript: it reads with the standalone question when the turn
		// has one.
		Question: q.Retrieval(),
		Context:  append(Transcript(system), lines...),
	}
	if q.Temperature != nil {
		req.Temperature = q.Temperature
	}
	if q.MaxTokens > 0 {
		req.MaxTokens = q.MaxTokens
	}
	return req, nil
}

// Answer asks the model. With fn it streams the reply through fn.
func (a *Answerer) Answer(ctx context.Context, q rag.Query, fn func(delta string) error) (rag.Answer, error) {
	req, err := a.Request(q)
	if err != nil {
		return rag.Answer{}, err
	}
	model, name, err := a.models.Get(q.Model)
	if err != nil {
		return rag.Answer{}, err
	}
	req.Model = name
	resp, err := llm.Generate(ctx, model, req, fn)
	ans := rag.Answer{From: "llm", Text: resp.Text, Response: resp}
	if err != nil {
		return ans, fmt.Errorf("llm chat: %w", err)
	}
	return ans, nil
}
