package mix

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
)

// Outcome is what one answerer (or, in context mode, one retriever) did.
// Its JSON form is persisted in a mixed turn's metadata ("answers").
type Outcome struct {
	From       string        `json:"from"`
	Text       string        `json:"text,omitempty"`
	Sources    []rag.Source  `json:"sources,omitempty"`
	Empty      bool          `json:"empty,omitempty"`
	Model      string        `json:"model,omitempty"`
	Extractive bool          `json:"extractive,omitempty"`
	Usage      llm.Usage     `json:"usage"`
	Ms         int64         `json:"ms"`
	Elapsed    time.Duration `json:"-"`
	Error      string        `json:"error,omitempty"`
	TimedOut   bool          `json:"timed_out,omitempty"`
	Err        error         `json:"-"`
	Response   llm.Response  `json:"-"`
}

// OK reports whether the answerer succeeded.
func (o Outcome) OK() bool { return o.Err == nil }

// Timings are the durations of a request's steps.
type Timings struct {
	Recall   time.Duration // recalling the history
	Condense time.Duration // rewriting the question
	Answers  time.Duration // the fan-out, from the first answerer's start to the last one's end
	Fusion   time.Duration // the fusion call (or context-mode answer call)
	// FirstToken is from the start of Mix to the first piece of the reply.
	FirstToken time.Duration
	// FirstText is from the start of Mix to the first text a client is
	// sent: a piece of an intermediate answer or of the reply, whichever
	// comes first.
	FirstText time.Duration
	Total     time.Duration
	// Store is storing the turn, after Total: known to the done event,
	// not to the record stored with the turn (omitted while zero).
	Store time.Duration
}

// Millis returns the timings in milliseconds, keyed for storage.
func (t Timings) Millis() map[string]float64 {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	m := map[string]float64{
		"recall_ms": ms(t.Recall), "condense_ms": ms(t.Condense), "answers_ms": ms(t.Answers),
		"fusion_ms": ms(t.Fusion), "first_token_ms": ms(t.FirstToken), "first_text_ms": ms(t.FirstText), "total_ms": ms(t.Total),
	}
	if t.Store > 0 {
		m["store_ms"] = ms(t.Store)
	}
	return m
}

// Result is what a Mixer did for one request: everything the caller stores
// with the turn.
type Result struct {
	Question string
	// Standalone is the rewritten question; "" when the question was not
	// rewritten.
	Standalone string
	// Context is the compressed context the rewrite produced.
	Context string
	// Condensed is true when the condenser read the history for this
	// question: Context is then the part of it the question needs.
	Condensed bool
	// History is the history the answerers saw.
	History []llm.Message
	Mode    string // FusionAnswers or FusionContext
	// Text is the reply: the fused answer, or the single answer when only
	// one was available. After an error it holds what was produced.
	Text string
	// Fused is true when a fusion call produced Text.
	Fused bool
	// Answers holds each selected answerer's outcome, in the deployment's
	// order; in context mode, each retriever's.
	Answers []Outcome
	// Docs are the sources of every answer, labelled by answerer.
	Docs []rag.Doc
	// Response is the reply's model response: the fusion call's, or the
	// single answer's.
	Response llm.Response
	// Usage adds up every model call the request made: the rewrite (when
	// the Condenser reports it), the answerers and the fusion call.
	Usage llm.Usage
	// CondenseUsage is the rewrite's part of Usage.
	CondenseUsage llm.Usage
	// CondenseError and FusionError record failures the Mixer worked
	// around (the question was used as asked; the best answer was
	// returned unfused).
	CondenseError string
	FusionError   string
	Timings       Timings
}

// Record returns what is stored with the turn as the answer's extra
// metadata.
func (r Result) Record() map[string]any {
	rec := map[string]any{
		"chat_type": "mix_chat",
		"fusion":    r.Mode,
		"fused":     r.Fused,
		"answers":   r.Answers,
		"timings":   r.Timings.Millis(),
	}
	if r.Standalone != "" {
		rec["standalone"] = r.Standalone
	}
	if r.Context != "" {
		rec["condensed_context"] = r.Context
	}
	if len(r.Docs) > 0 {
		rec["docs"] = r.Docs
	}
	if r.CondenseUsage.TotalTokens > 0 {
		rec["condense_usage"] = r.CondenseUsage
	}
	if r.CondenseError != "" {
		rec["condense_error"] = r.CondenseError
	}
	if r.FusionError != "" {
		rec["fusion_error"] = r.FusionError
	}
	var failed []string
	for _, o := range r.Answers {
		if !o.OK() {
			failed = append(failed, o.From)
		}
	}
	if len(failed) > 0 {
		rec["failed"] = failed
	}
	return rec
}

// Calls returns the model responses the request took: each answerer's,
// and the fusion call's when it fused.
func (r Result) Calls() []llm.Response {
	calls := make([]llm.Response, 0, len(r.Answers)+1)
	for _, o := range r.Answers {
		calls = append(calls, o.Response)
	}
	if r.Fused {
		calls = append(calls, r.Response)
	}
	return calls
}

// Condensed is a rewritten question.
type Condensed struct {
	Standalone string
	Context    string
	// Rewritten is false when the question was left as asked: there was
	// no history, no Condenser, or the Condenser kept it.
	Rewritten bool
	// Usage is the tokens the rewrite used, when the Condenser reports
	// them (a UsageCondenser).
	Usage   llm.Usage
	Elapsed time.Duration
}

// Condense rewrites question into a standalone one given history, with the
// Mixer's Condenser under the condense timeout. Without history or a
// Condenser it returns the question as asked. After an error Standalone is
// the question as asked, so callers may go on with it.
func (m *Mixer) Condense(ctx context.Context, history []llm.Message, question string) (Condensed, error) {
	c := Condensed{Standalone: question}
	if m.condenser == nil || !hasDialog(history) {
		return c, nil
	}
	t := time.Now()
	cctx, cancel := withTimeout(ctx, m.cfg.Timeouts.Condense, "condense")
	defer cancel()
	var standalone, context string
	var err error
	if uc, ok := m.condenser.(UsageCondenser); ok {
		standalone, context, c.Usage, err = uc.CondenseUsage(cctx, history, question)
	} else {
		standalone, context, err = m.condenser.Condense(cctx, history, question)
	}
	c.Elapsed = time.Since(t)
	if err != nil {
		if te := timedOut(cctx, ctx); te != nil {
			return c, te
		}
		return c, fmt.Errorf("condense question: %w", err)
	}
	c.Context = context
	if s := strings.TrimSpace(standalone); s != "" && s != strings.TrimSpace(question) {
		c.Standalone, c.Rewritten = s, true
	}
	return c, nil
}

func hasDialog(h []llm.Message) bool {
	for _, m := range h {
		if m.Role == llm.RoleUser || m.Role == llm.RoleAssistant {
			return true
		}
	}
	return false
}
