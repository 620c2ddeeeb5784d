package turn

import (
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

// Event types, in the order a turn reports them. A single-answerer turn
// reports its answerer's status, the reply's deltas and its docs; a mixed
// turn reports what the Mixer does (statuses, the rewritten question,
// intermediate answers, the reply's deltas, the docs).
const (
	// EventStatus: an answerer (or "condense", "fusion") started, finished
	// or failed; Answerer, State, Ms, Error, TimedOut, Empty.
	EventStatus = mix.EventStatus
	// EventStandalone: the follow-up question was rewritten; Text, Ms.
	EventStandalone = mix.EventStandalone
	// EventAnswer: an intermediate answer, in full; Answerer, Text.
	EventAnswer = mix.EventAnswer
	// EventAnswerDelta: a piece of an intermediate answer as the model
	// writes it; Answerer, Text. The answer's EventAnswer follows in full.
	EventAnswerDelta = mix.EventAnswerDelta
	// EventDelta: a piece of the reply; Text.
	EventDelta = mix.EventDelta
	// EventDocs: the evidence the reply rests on; Docs.
	EventDocs = mix.EventDocs
)

// Event is one thing a turn reports while it runs. Which fields are set
// depends on Type.
type Event struct {
	Type     string
	Answerer string
	State    string // EventStatus: mix.StateStarted, StateDone, StateFailed
	Ms       int64  // time the answerer (or the rewrite) took
	Text     string
	Error    string
	TimedOut bool
	Empty    bool // the answerer found nothing to answer from
	Docs     []rag.Doc
}

func fromMix(ev mix.Event) Event {
	return Event{Type: ev.Type, Answerer: ev.Answerer, State: ev.State, Ms: ev.Ms, Text: ev.Text,
		Error: ev.Error, TimedOut: ev.TimedOut, Empty: ev.Empty, Docs: ev.Docs}
}
