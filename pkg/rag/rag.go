// Package rag is the vocabulary every answerer and the orchestrator share:
// the Query an answerer is asked, the Answer it gives and the Sources it
// rests on, the Answerer contract (with the AnswerFunc adapter and the
// optional Retriever ability), and the evidence budget of a prompt. It is a
// leaf: the answerers (chat, kb, search), the Mixer (pkg/mix), the turn and
// the server import it, and it imports nothing of mixchat's but pkg/llm.
package rag

import (
	"context"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Names of the answerers a deployment can enable.
const (
	LLM    = "llm"
	KB     = "kb"
	Search = "search"
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
	// EvidenceTokens bounds the evidence (results, passages) an answerer
	// puts in its prompt, best first; 0 means no limit. FitEvidence cuts
	// texts to it.
	EvidenceTokens int
}

// Retrieval returns the question retrieval should use: the standalone
// question when there is one, else the question as asked.
func (q Query) Retrieval() string {
	if q.Standalone != "" {
		return q.Standalone
	}
	return q.Text
}

// Source is one piece of evidence an answer rests on. Its JSON form is a
// persisted format: sources are stored in a turn's metadata (the "docs"
// and "answers" records of a mixed turn).
type Source struct {
	Title   string  `json:"title,omitempty"`
	URL     string  `json:"url,omitempty"`     // file link or web address
	Snippet string  `json:"snippet,omitempty"` // the text used
	Score   float64 `json:"score,omitempty"`   // normalised relevance in [0,1], higher is better
	KB      string  `json:"knowledge_base,omitempty"`
	File    string  `json:"file,omitempty"`
	// Path is the section path of the passage in its document, outermost
	// first with " > " between ("劳动法 > 第四章 > 第三十六条"); "" when
	// the passage has none.
	Path string `json:"path,omitempty"`
	// Match says how the passage was found: MatchPart for the part of a
	// document a question addresses by number or name, MatchAbsent for the
	// statement that an addressed part (or document) does not exist, ""
	// for similarity.
	Match string `json:"match,omitempty"`
	// Profile names the structure profile the passage's knowledge base
	// reads its documents with, "" for none (llm.Evidence.Profile).
	Profile string `json:"profile,omitempty"`
}

// The ways a passage is found (Source.Match, llm.Evidence.Match).
const (
	// MatchPart marks the exact part a question addresses ("第三十六条",
	// "Article I, Section 8"): the first evidence, ahead of similarity.
	MatchPart = "part"
	// MatchAbsent marks a statement that the addressed part or document is
	// not in the knowledge base ("X has no Article IX; its articles run
	// from I to VII"): evidence that the thing asked for does not exist.
	MatchAbsent = "absent"
)

// Answer is one answerer's reply.
type Answer struct {
	From    string // "llm", "kb", "search"
	Text    string
	Sources []Source
	// Empty is true when retrieval found nothing and the text says so (or
	// comes from the model alone).
	Empty bool
	// Reason says why nothing was used when Empty (for a knowledge base:
	// the best relevance found against the threshold); "" otherwise.
	Reason   string
	Response llm.Response // the model's reply as returned (model, usage, extractive)
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

// Retriever is an optional ability of an answerer: returning the evidence
// it would answer from (knowledge-base chunks, search passages) without
// calling a model. The Mixer's "context" fusion mode uses it to answer with
// one model call over every answerer's evidence. Sources come best first;
// nothing found is an empty list and a nil error. Answerers without
// evidence of their own (the LLM-chat answerer) do not implement it.
type Retriever interface {
	Retrieve(ctx context.Context, q Query) ([]Source, error)
}

// Doc is a source labelled with the answerer that used it. Its JSON form
// is persisted in a mixed turn's metadata ("docs").
type Doc struct {
	From string `json:"from"` // "kb", "search"
	Source
}

// DocsOf labels sources with the answerer that used them.
func DocsOf(from string, sources []Source) []Doc {
	docs := make([]Doc, 0, len(sources))
	for _, s := range sources {
		docs = append(docs, Doc{From: from, Source: s})
	}
	return docs
}
