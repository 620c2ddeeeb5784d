// Package llm is mixchat's vocabulary for language models: messages, requests
// and responses, the Model contract every answerer calls, the client for any
// OpenAI-compatible endpoint, the Grounding a reply rests on and the
// Generator that reads either it or the prompt, and token counting. The
// offline extractive model, the zero-setup default, is package extractive.
package llm

import (
	"context"
	"fmt"
)

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat completion request. The structured material a
// prompt was rendered from travels beside it, as a Grounding (Generator).
type Request struct {
	Model       string    // model name as configured; empty means the default
	Messages    []Message // the prompt
	Temperature *float32  // nil means the model's default
	MaxTokens   int       // 0 means no limit
}

// Usage counts tokens of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// Estimated is true when the counts were made locally with a Tokenizer
	// (the model reported none, or the model is the offline one) rather
	// than reported by the upstream.
	Estimated bool `json:"estimated,omitempty"`
}

// Add returns the sum of u and o; the sum is estimated when either is.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		Estimated:        u.Estimated || o.Estimated,
	}
}

// Response is the result of one completion, streamed or not.
type Response struct {
	Text         string `json:"text"`
	Model        string `json:"model"`
	Usage        Usage  `json:"usage"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Extractive is true when the text was assembled from sentences of the
	// request's grounding by the offline model rather than generated.
	Extractive bool `json:"extractive,omitempty"`
	// NothingFound is true when the reply only says that nothing in the
	// grounding answers the question (the extractive model's refusal; a
	// generative model's refusal is text and leaves it false).
	NothingFound bool `json:"nothing_found,omitempty"`
}

// Model is a chat model.
//
// Complete returns the whole reply. Stream calls fn with each piece of the
// reply in order as it arrives and returns the whole reply at the end; an
// error from fn stops the stream and is returned. Both honour ctx: a
// cancelled context stops the upstream call.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
	Stream(ctx context.Context, req Request, fn func(delta string) error) (Response, error)
}

// Generate asks m for the reply to req: streamed through fn when fn is
// set (Stream), in one call otherwise (Complete).
func Generate(ctx context.Context, m Model, req Request, fn func(delta string) error) (Response, error) {
	if fn != nil {
		return m.Stream(ctx, req, fn)
	}
	return m.Complete(ctx, req)
}

// Embedder turns texts into vectors: one vector per text, in the same order,
// all of the same dimension.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// StatusError is an upstream failure with the HTTP status and body the
// upstream returned. Status is 0 when no response was received.
type StatusError struct {
	Op         string // "chat", "stream", "embed"
	Model      string
	StatusCode int
	Body       string
	Err        error // the underlying error, if any (nil when status and body say it all)
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("llm %s %s", e.Op, e.Model)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(": status %d", e.StatusCode)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Body != "" {
		b := e.Body
		if len(b) > 500 {
			b = b[:500] + "…"
		}
		msg += ": " + b
	}
	return msg
}

func (e *StatusError) Unwrap() error { return e.Err }
