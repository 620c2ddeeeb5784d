// Package mix is the orchestrator: the Mixer rewrites a follow-up once,
// runs the answerers it is given (each a rag.Answerer: LLM chat, knowledge
// base, search) concurrently, and fuses their answers into one reply.
package mix

import (
	"context"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// Condenser rewrites a follow-up question into one that stands alone.
//
// Condense returns the standalone question (the question itself when it
// needs no rewriting) and a compressed context: the part of history that
// bears on the question, short enough for a prompt ("" when there is
// none). It is called once per question, and only when there is history.
type Condenser interface {
	Condense(ctx context.Context, history []llm.Message, question string) (standalone, context string, err error)
}

// UsageCondenser is an optional ability of a Condenser: CondenseUsage is
// Condense that also returns the tokens the rewrite used, which the Mixer
// adds to the request's usage. A Condenser without it is counted as using
// no tokens.
type UsageCondenser interface {
	CondenseUsage(ctx context.Context, history []llm.Message, question string) (standalone, context string, usage llm.Usage, err error)
}

// CondenseFunc adapts a function to Condenser.
type CondenseFunc func(ctx context.Context, history []llm.Message, question string) (string, string, error)

// Condense calls f.
func (f CondenseFunc) Condense(ctx context.Context, history []llm.Message, question string) (string, string, error) {
	return f(ctx, history, question)
}

// Fusion modes.
const (
	// FusionAnswers runs every answerer and fuses their answers with the
	// MTPE prompt: one model call per answerer plus one to fuse.
	FusionAnswers = "answers"
	// FusionContext gathers the retrievers' evidence and answers with one
	// model call over it and the history; there are no intermediate
	// answers.
	FusionContext = "context"
)

// Event types a Mixer reports while it works.
const (
	EventStatus     = "status"     // an answerer (or retriever) started, finished or failed; also "condense" and "fusion" failing, worked around
	EventStandalone = "standalone" // the follow-up question was rewritten: Text is the standalone question
	EventAnswer     = "answer"     // an intermediate answer, in full: Answerer, Text
	// EventAnswerDelta is a piece of an intermediate answer as the model
	// writes it: Answerer, Text. The answer event still follows in full.
	EventAnswerDelta = "answer_delta"
	EventDelta       = "delta" // a piece of the reply
	EventDocs        = "docs"  // the evidence the reply rests on
)

// Answerer states of a status event.
const (
	StateStarted = "started"
	StateDone    = "done"
	StateFailed  = "failed"
)

// Event is one thing a Mixer reports while it works, in the order it
// happens. Which fields are set depends on Type.
type Event struct {
	Type     string
	Answerer string
	State    string
	Ms       int64 // time the answerer took (done, failed) or the rewrite took
	Text     string
	Error    string
	TimedOut bool
	Empty    bool // the answerer found nothing to answer from
	Docs     []rag.Doc
}
