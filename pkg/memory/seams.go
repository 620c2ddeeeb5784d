package memory

import (
	"context"

	"github.com/mixchat/mixchat/pkg/llm"
)

// The three pieces of memory's work that need a reader of language: the
// follow-up rewrite, the running summary, and the extraction of facts and
// triples. Memory declares what it needs of each; a model implements them
// with the memory_* prompts (ModelRewriter, ModelSummarizer,
// ModelExtractor, in this package) and the offline stand-ins in
// pkg/extractive implement them without a model. The wiring chooses;
// memory never looks at which one it got.

// Rewriter makes a follow-up question stand alone.
type Rewriter interface {
	// Rewrite returns the standalone form of f.Question (the question
	// itself when it needs no rewrite, with Skipped and Reason saying
	// why) and the facts of f.Recent needed to answer it (Context; ""
	// for none). It is called only when the conversation has history
	// and the rewrite policy is not "never" (Config.Rewrite); what it
	// does with a question that seems to stand alone is its own
	// judgement unless f.Always. On failure it returns the error; the
	// caller then uses the question as asked.
	Rewrite(ctx context.Context, f FollowUp) (Condensed, error)
}

// Summarizer writes a conversation's running summary.
type Summarizer interface {
	// Summarize folds lines (oldest first) into the summary prev ("" at
	// first) and returns the new summary, within about maxTokens (the
	// caller cuts what exceeds it to whole sentences).
	Summarize(ctx context.Context, prev string, lines []Line, maxTokens int) (string, error)
}

// Extractor reads what lines of a conversation state.
type Extractor interface {
	// Entities returns facts about the people, places and things lines
	// speak of; known names the entities already known (so a reply can
	// keep their spelling).
	Entities(ctx context.Context, lines []Line, known []string) ([]EntityFact, error)
	// Triples returns the (subject, relation, object) triples lines
	// state; a Triple with Turn 0 is of the lines' last turn.
	Triples(ctx context.Context, lines []Line) ([]Triple, error)
	// UserFacts returns durable facts about the user from lines; known
	// are the facts already kept.
	UserFacts(ctx context.Context, lines []Line, known []string) ([]string, error)
}

// Incremental is an optional ability of an Extractor: one whose calls
// cost no model call returns true, and memory gives it every turn as it
// is stored. Any other Extractor gets the turns in batches of one more
// than Config.RecentTurns (the turns not yet read are then never more
// than the recent turns, which the strategies show verbatim).
type Incremental interface {
	Incremental() bool
}

// FollowUp is what a Rewriter reads.
type FollowUp struct {
	// Topic names what the whole conversation is about (an article's
	// title, a section heading), most important first; may be empty.
	Topic []string
	// History is the conversation before Question as recalled: the
	// memory's system messages (long-term memory, summary, facts), then
	// the exchanges.
	History []llm.Message
	// Recent are the last exchanges of History that fit
	// Config.Condense (at most MaxPairs question/answer pairs within
	// MaxTokens), oldest first: what a rewrite reads.
	Recent   []Line
	Question string
	// Always asks for a rewrite even when the question seems to stand
	// alone (the "always" policy).
	Always bool
}

// Line is one message of a conversation as the summary, the extraction
// and the rewrite read it.
type Line struct {
	// Turn is the id of the message's turn (0 when unknown).
	Turn int64
	// Role is llm.RoleUser or llm.RoleAssistant ("" reads as the user's).
	Role string
	// Speaker is the speaker's name; "" when unknown.
	Speaker string
	Text    string
}

// Label names the line's speaker: the name when known, else Human or AI
// (the labels of the conversation prompt).
func (l Line) Label() string {
	if l.Speaker != "" {
		return l.Speaker
	}
	if l.Role == llm.RoleAssistant {
		return "AI"
	}
	return "Human"
}

// Entity is the entity a line's first-person statements are about: the
// speaker's name, UserLabel for an unnamed user, "" for the unnamed AI.
func (l Line) Entity() string {
	if l.Speaker != "" {
		return l.Speaker
	}
	if l.Role == llm.RoleUser {
		return UserLabel
	}
	return ""
}

// String is the line as prompts show it: "Label: text".
func (l Line) String() string { return l.Label() + ": " + l.Text }

// EntityFact is one fact about a named entity, as an Extractor reads it.
type EntityFact struct {
	Name, Fact string
}

// Rewrite policies (Config.Rewrite): whether a follow-up is rewritten.
const (
	// RewriteAuto asks the Rewriter whenever the conversation has history;
	// the Rewriter judges whether the question needs a rewrite (a model
	// decides in its reply; the extractive rewriter leaves a question
	// that names its subject as it is).
	RewriteAuto = "auto"
	// RewriteAlways asks the Rewriter whenever the conversation has
	// history, with FollowUp.Always set.
	RewriteAlways = "always"
	// RewriteNever never rewrites: the question is used as asked.
	RewriteNever = "never"
)

// exportLines returns ls as Lines.
func exportLines(ls []line) []Line {
	out := make([]Line, len(ls))
	for i, l := range ls {
		out[i] = l.export()
	}
	return out
}

func (l line) export() Line {
	return Line{Turn: l.turn, Role: l.role, Speaker: l.speaker, Text: l.text}
}
