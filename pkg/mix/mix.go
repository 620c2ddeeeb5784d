// Package mix defines what an answerer is (the LLM-chat, knowledge-base and
// search answerers all satisfy Answerer) and fuses their answers into one
// reply.
package mix

import (
	"context"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Query is what an answerer is asked.
type Query struct {
	Text       string        // the user's question as asked
	Standalone string        // the question rewritten to stand alone; "" when it already does
	History    []llm.Message // the conversation as the model should see it (may be empty)
	// Model, Temperature and MaxTokens select and tune the LLM call; zero
	// values mean the answerer's defaults.
	Model       string
	Temperature *float32
	MaxTokens   int
	PromptName  string // prompt template variant; "" means default
	TopK        int    // retrieval depth for kb and search; 0 means default
	// ScoreThreshold is the minimum normalised relevance in [0,1] for kb
	// hits; 0 means the answerer's default.
	ScoreThreshold float64
	KnowledgeBases []string // for kb
	SearchEngine   string   // for search; "" means default
}

// Retrieval returns the question retrieval should use: the standalone
// question when there is one, else the question as asked.
func (q Query) Retrieval() string {
	if q.Standalone != "" {
		return q.Standalone
	}
	return q.Text
}

// Source is one piece of evidence an answer rests on.
type Source struct {
	Title   string  `json:"title,omitempty"`
	URL     string  `json:"url,omitempty"`     // file link or web address
	Snippet string  `json:"snippet,omitempty"` // the text used
	Score   float64 `json:"score,omitempty"`   // normalised relevance in [0,1], higher is better
	KB      string  `json:"knowledge_base,omitempty"`
	File    string  `json:"file,omitempty"`
}

// Answer is one answerer's reply.
type Answer struct {
	From    string   `json:"from"` // "llm", "kb", "search"
	Text    string   `json:"text"`
	Sources []Source `json:"sources,omitempty"`
	// Empty is true when retrieval found nothing and the text says so (or
	// comes from the model alone).
	Empty    bool         `json:"empty,omitempty"`
	Response llm.Response `json:"response"` // the model's reply as returned (model, usage, extractive)
}

// Answerer answers a query. fn, when not nil, receives pieces of the answer
// as they stream; an error from fn stops the answer and is returned.
type Answerer interface {
	Answer(ctx context.Context, q Query, fn func(delta string) error) (Answer, error)
}

// AnswerFunc adapts a function to Answerer.
type AnswerFunc func(ctx context.Context, q Query, fn func(delta string) error) (Answer, error)

// Answer calls f.
func (f AnswerFunc) Answer(ctx context.Context, q Query, fn func(delta string) error) (Answer, error) {
	return f(ctx, q, fn)
}
