// Package turn runs one conversation turn end to end, for every chat
// endpoint: recall the conversation's history, answer with one answerer
// (LLM chat, knowledge base, search) or with several through the Mixer (which
// rewrites a follow-up question once and fuses the answers), store question
// and answer in one transaction — a reply cut short as interrupted — and tell
// the memory about the stored turn. It reports what happens as one stream of
// typed events through a callback; the HTTP server only translates wire
// formats.
package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
)

// Store keeps conversations; memory.Store satisfies it.
type Store interface {
	// AppendTurn stores question and answer in one transaction, creating
	// the conversation when it does not exist.
	AppendTurn(ctx context.Context, conversationID string, question, answer memory.Message) (memory.Turn, error)
	// Turns returns the last limit turns; memory.ErrNotFound when the
	// conversation does not exist.
	Turns(ctx context.Context, conversationID string, limit int) ([]memory.Turn, error)
	Conversation(ctx context.Context, id string) (memory.Conversation, error)
	RenameConversation(ctx context.Context, id, name string) error
}

// Memory is the conversation memory: the history a model sees for a
// question, and what is done with a stored turn (compression, entity
// extraction) without delaying the reply. *memory.Manager satisfies it.
type Memory interface {
	// RecallChoice returns the history for question as the request's
	// resolved memory settings (memory.ResolveRequest) choose it. A
	// conversation that does not exist has no history.
	RecallChoice(ctx context.Context, conversationID, question string, c memory.Choice) ([]llm.Message, error)
	// Remember is told of each stored turn; it returns at once.
	Remember(ctx context.Context, conversationID string, t memory.Turn)
}

// Deps are what a Runner works with. Store is required.
type Deps struct {
	Store Store
	// Memory recalls history and is told of stored turns; nil means the
	// last HistoryLen turns of Store, and nothing told.
	Memory Memory
	// HistoryLen is how many turns are recalled without Memory when a
	// request leaves it to the strategy; 0 means 10.
	HistoryLen int
	// Mixer runs turns with several answerers; nil refuses them.
	Mixer *mix.Mixer
	// Obs measures and traces single answerers (the Mixer's are wrapped
	// where they are built) and prices replies; nil means no metrics and
	// no prices.
	Obs *obs.Observer
	Log *slog.Logger
}

// Runner runs turns. It is safe for concurrent use.
type Runner struct {
	d Deps
}

// New returns a Runner for d.
func New(d Deps) *Runner {
	if d.HistoryLen <= 0 {
		d.HistoryLen = 10
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Runner{d: d}
}

// Request is one turn to run.
type Request struct {
	// ConversationID names the conversation the turn is stored in; ""
	// stores nothing and recalls nothing.
	ConversationID string
	// AnswerID is the id the answer is stored under; "" means a new one.
	// Callers that stream set it, so their events can carry it.
	AnswerID string
	// Query is what the answerers are asked; Query.Text is the question.
	// When Query.History is empty the history is recalled.
	Query rag.Query
	// HistoryLen is how many past turns to recall: -1 lets the memory
	// strategy decide, 0 recalls nothing.
	HistoryLen int
	// Memory names the memory strategy; "" means the configured one.
	Memory string
	// WindowK sizes the window strategy for this turn; 0 means the
	// configured size. HistoryLen, Memory and WindowK are settled by
	// memory.ResolveRequest (Choice).
	WindowK int
	// Condense rewrites a follow-up into a standalone question before a
	// single answerer that retrieves (kb, search) runs, against the
	// client's history or else the recalled one, with the Mixer's
	// condenser, as a mixed turn does; a Query.Standalone already set is
	// kept. A failed rewrite leaves the question as asked.
	Condense bool
	// RewriteOnly says a recalled history serves the rewrite alone: the
	// answerer answers from Query.History as given. The recall then asks
	// for the exchanges only (memory.Choice.Exchanges), which is all a
	// rewrite reads, and skips the memory it does not (summary, facts,
	// retrieved excerpts) and the search that finds them.
	RewriteOnly bool

	// Either one answerer, named From ("llm", "kb", "search") ...
	From     string
	Answerer rag.Answerer
	// ... or several through the Mixer: Mix's Query is replaced by Query
	// with its recalled history.
	Mix *mix.Request

	// Record returns what is stored with the answer besides the reply
	// (sources, answerer): the answer's extra metadata. nil stores the
	// Mixer's record for a mixed turn and nothing for a single answer.
	Record func(Result) map[string]any
}

// Choice settles the request's memory settings (memory.ResolveRequest).
func (q Request) Choice() (memory.Choice, error) {
	return memory.ResolveRequest(q.Memory, q.HistoryLen, q.WindowK)
}

// Recalls reports whether the turn recalls the conversation's history: no
// history was given, a conversation is named and HistoryLen is not 0.
func (q Request) Recalls() bool {
	return len(q.Query.History) == 0 && q.ConversationID != "" && q.HistoryLen != 0
}

// Result is what a turn did.
type Result struct {
	ConversationID string
	// AnswerID is the answer's message id (Request.AnswerID, or a new
	// one); MessageID is what a client is given.
	AnswerID string
	TurnID   int64
	// Answered is true when the turn got far enough to be stored: an
	// answer came, whole or in part. When Run fails with Answered false
	// nothing was said and nothing stored.
	Answered bool
	// Text is all the reply the model produced; Sent the part the
	// callback took (all of it for a reply not streamed).
	Text, Sent string
	// Interrupted marks a reply cut short or broken off; it is stored
	// with Sent as its content and Text as the original.
	Interrupted bool
	// Cut is true when the turn was stopped from outside: ctx ended (the
	// client went away, a shutdown) or the callback failed (WriteErr).
	Cut      bool
	WriteErr error
	// Response is the reply's model response; its usage adds up every
	// call the turn made.
	Response llm.Response
	// Standalone is the rewritten question a single answerer retrieved
	// with (Request.Condense); "" when it was not rewritten.
	Standalone string
	// Answer is the single answerer's reply; Mix the Mixer's result.
	Answer rag.Answer
	Mix    mix.Result
	// Usage is the reply's tokens, latency and price.
	Usage obs.Usage
	// StoreErr says why storing the turn failed.
	StoreErr error
	// calls are the responses of every model call, for pricing.
	calls []llm.Response
}

// MessageID is the id a client refers to the reply with: the stored
// answer's, or "" when nothing is stored.
func (r Result) MessageID() string { return MessageID(r.ConversationID, r.AnswerID) }

// MessageID is the id a client refers to a reply by: answerID, or "" when
// no conversation is named (nothing is stored). Handlers call it before the
// turn runs, so that streamed events can carry it.
func MessageID(conversationID, answerID string) string {
	if conversationID == "" {
		return ""
	}
	return answerID
}

// Run runs the turn, calling emit (never concurrently) with each event as
// it happens; emit nil runs the turn without streaming. An error from emit
// or a cancelled ctx stops the work: the turn is then stored as interrupted
// with what emit took. Run returns the error that ended the answer: when
// Result.Answered is false nothing was said or stored; otherwise the turn
// was stored (Result.StoreErr aside) and the error says why it broke off.
func (r *Runner) Run(ctx context.Context, req Request, emit func(Event) error) (Result, error) {
	res := Result{ConversationID: req.ConversationID, AnswerID: req.AnswerID}
	if res.AnswerID == "" {
		res.AnswerID = uuid.NewString()
	}
	if req.Mix == nil && req.Answerer == nil {
		return res, errors.New("turn: no answerer")
	}
	if req.Mix != nil && r.d.Mixer == nil {
		return res, errors.New("turn: no mixer configured")
	}
	q := req.Query
	var recallTime time.Duration
	if req.Recalls() {
		start := time.Now()
		c, err := req.Choice()
		if err != nil {
			return res, fmt.Errorf("turn: %w", err)
		}
		c.Exchanges = req.RewriteOnly && req.Condense && req.Mix == nil
		h, err := r.recall(ctx, req.ConversationID, q.Text, c)
		if err != nil {
			return res, err
		}
		q.History, recallTime = h, time.Since(start)
	}
	if req.Condense && req.Mix == nil {
		if err := r.condense(ctx, &q, &res); err != nil {
			return res, err
		}
		if req.RewriteOnly {
			q.History = req.Query.History
		}
	}

	var sent, received strings.Builder
	var send func(Event) error
	if emit != nil {
		send = func(ev Event) error {
			if ev.Type == EventDelta {
				received.WriteString(ev.Text)
			}
			if res.WriteErr = emit(ev); res.WriteErr != nil {
				return res.WriteErr
			}
			if ev.Type == EventDelta {
				sent.WriteString(ev.Text)
			}
			return nil
		}
	}
	var err error
	if req.Mix != nil {
		err = r.mix(ctx, req, q, send, &res)
		res.Mix.Timings.Recall = recallTime
	} else {
		err = r.single(ctx, req, q, send, &res)
	}
	res.Cut = ctx.Err() != nil || res.WriteErr != nil
	if err != nil && (emit == nil || (!res.Cut && received.Len() == 0)) {
		// Failed before saying anything: nothing to store.
		return res, err
	}
	res.Answered = true
	res.Sent = sent.String()
	if emit == nil {
		res.Sent = res.Text
	}
	if res.Text == "" {
		res.Text = received.String()
	}
	res.Interrupted = err != nil
	var extra map[string]any
	switch {
	case req.Record != nil:
		extra = req.Record(res)
	case req.Mix != nil:
		extra = res.Mix.Record()
	}
	if err != nil && !res.Cut {
		if extra == nil {
			extra = map[string]any{}
		}
		extra["error"] = err.Error()
	}
	storeStart := time.Now()
	res.StoreErr = r.store(ctx, &res, req.Query.Text, extra)
	if req.Mix != nil {
		res.Mix.Timings.Store = time.Since(storeStart)
	}
	if res.StoreErr != nil && res.Cut {
		r.d.Log.ErrorContext(ctx, "store interrupted turn", "conversation", req.ConversationID, "err", res.StoreErr)
	}
	return res, err
}

// single answers with req's one answerer, streaming its reply as deltas.
func (r *Runner) single(ctx context.Context, req Request, q rag.Query, send func(Event) error, res *Result) error {
	a := req.Answerer
	if r.d.Obs != nil {
		a = r.d.Obs.Answerer(req.From, a)
	}
	var fn func(string) error
	if send != nil {
		if err := send(Event{Type: EventStatus, Answerer: req.From, State: mix.StateStarted}); err != nil {
			return err
		}
		fn = func(d string) error { return send(Event{Type: EventDelta, Text: d}) }
	}
	start := time.Now()
	ans, err := a.Answer(ctx, q, fn)
	res.Answer, res.Response = ans, ans.Response
	res.calls = []llm.Response{ans.Response}
	if err == nil {
		res.Text = ans.Text
	}
	if send == nil || res.WriteErr != nil || ctx.Err() != nil {
		return err
	}
	ms := time.Since(start).Milliseconds()
	if err != nil {
		_ = send(Event{Type: EventStatus, Answerer: req.From, State: mix.StateFailed, Ms: ms, Error: err.Error()})
		return err
	}
	if err := send(Event{Type: EventStatus, Answerer: req.From, State: mix.StateDone, Ms: ms, Empty: ans.Empty}); err != nil {
		return err
	}
	return send(Event{Type: EventDocs, Docs: rag.DocsOf(ans.From, ans.Sources)})
}

// mix answers with the Mixer: it rewrites a follow-up once, fans out to the
// answerers and fuses their answers.
func (r *Runner) mix(ctx context.Context, req Request, q rag.Query, send func(Event) error, res *Result) error {
	mreq := *req.Mix
	mreq.Query = q
	var fn func(mix.Event) error
	if send != nil {
		fn = func(ev mix.Event) error { return send(fromMix(ev)) }
	}
	m, err := r.d.Mixer.Mix(ctx, mreq, fn)
	res.Mix = m
	res.Text = m.Text
	res.Response = llm.Response{Text: m.Text, Model: m.Response.Model, Extractive: m.Response.Extractive,
		NothingFound: m.Response.NothingFound, FinishReason: m.Response.FinishReason, Usage: m.Usage}
	res.calls = m.Calls()
	return err
}

// condense rewrites q's follow-up question for a single answerer that
// retrieves: once, with the Mixer's condenser, as Mixer.Mix does for a
// mixed turn. Only a cancelled ctx is an error.
func (r *Runner) condense(ctx context.Context, q *rag.Query, res *Result) error {
	if r.d.Mixer == nil || !r.d.Mixer.Config().Condense || q.Standalone != "" {
		return nil
	}
	c, err := r.d.Mixer.Condense(ctx, q.History, q.Text)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("condense question: %w", context.Cause(ctx))
	case err != nil:
		r.d.Log.WarnContext(ctx, "condense question failed: retrieving with the question as asked", "err", err)
	case c.Rewritten:
		q.Standalone, res.Standalone = c.Standalone, c.Standalone
	}
	return nil
}

// recall returns the conversation's history as the model should see it.
func (r *Runner) recall(ctx context.Context, conversationID, question string, c memory.Choice) ([]llm.Message, error) {
	if r.d.Memory != nil {
		h, err := r.d.Memory.RecallChoice(ctx, conversationID, question, c)
		if err != nil {
			return nil, fmt.Errorf("recall history: %w", err)
		}
		return h, nil
	}
	historyLen := r.d.HistoryLen
	switch {
	case c.Strategy == memory.NoHistory:
		return nil, nil
	case c.Strategy == memory.Window && c.WindowK > 0:
		historyLen = c.WindowK
	}
	turns, err := r.d.Store.Turns(ctx, conversationID, historyLen)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recall history: %w", err)
	}
	return memory.History(turns), nil
}

// Recall returns the history a turn of conversationID would see with the
// memory settings c (memory.ResolveRequest).
func (r *Runner) Recall(ctx context.Context, conversationID, question string, c memory.Choice) ([]llm.Message, error) {
	return r.recall(ctx, conversationID, question, c)
}
