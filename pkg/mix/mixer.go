package mix

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/prompts"
)

// Deps are what a Mixer works with. What the caller does not have it leaves
// out (a nil interface, never a nil pointer in one).
type Deps struct {
	// Models resolves the fusion model; required.
	Models llm.Models
	// Answerers by name ("llm", "kb", "search"). An answerer the
	// configuration enables but that is missing here (say, no knowledge
	// base is configured) is off.
	Answerers map[string]rag.Answerer
	// Condenser rewrites follow-up questions; nil leaves them as asked.
	Condenser Condenser
}

// Mixer runs the answerers concurrently and fuses their answers. It is safe
// for concurrent use; every goroutine it starts for a request has ended when
// Mix returns.
type Mixer struct {
	cfg       Config
	models    llm.Models
	names     []string // enabled and available, in the configuration's order
	answerers map[string]rag.Answerer
	condenser Condenser
}

// New returns a Mixer for cfg. It fails when cfg is invalid, Models is nil,
// or none of the enabled answerers is available.
func New(cfg Config, deps Deps) (*Mixer, error) {
	if cfg.Prompt == "" {
		cfg.Prompt = "default"
	}
	if cfg.ContextPrompt == "" {
		cfg.ContextPrompt = FusionContext
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Timeouts.Answerers = maps.Clone(cfg.Timeouts.Answerers) // the caller's map stays the caller's
	if deps.Models == nil {
		return nil, errors.New("mix: no models to fuse with")
	}
	m := &Mixer{cfg: cfg, models: deps.Models, answerers: map[string]rag.Answerer{}}
	m.condenser = deps.Condenser
	for _, name := range cfg.Answerers {
		if a := deps.Answerers[name]; a != nil {
			m.names = append(m.names, name)
			m.answerers[name] = a
		}
	}
	if len(m.names) == 0 {
		return nil, fmt.Errorf("mix: none of the enabled answerers (%s) is available", strings.Join(cfg.Answerers, ", "))
	}
	return m, nil
}

// Answerers returns the names of the answerers this Mixer runs by default,
// in order.
func (m *Mixer) Answerers() []string { return slices.Clone(m.names) }

// Config returns the Mixer's configuration.
func (m *Mixer) Config() Config { return m.cfg }

// Request is one question for the Mixer.
type Request struct {
	// Query is what the answerers are asked, with the history the caller
	// recalled (pkg/turn). The Mixer rewrites a follow-up question into
	// Query.Standalone, unless the caller set it already.
	Query rag.Query
	// Answerers switches answerers for this request; nil means the
	// deployment's. Each must be enabled in the deployment.
	Answerers []string
	// Fusion is the fusion mode; "" means the configured one.
	Fusion string
	// PromptName selects the mix_chat template; "" means the mode's
	// configured one.
	PromptName string
}

// RequestError is a request the Mixer cannot run as asked; the caller
// should report it as a client mistake.
type RequestError struct {
	Field string
	Msg   string
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Msg }

// Check validates req without running it.
func (m *Mixer) Check(req Request) error {
	if strings.TrimSpace(req.Query.Text) == "" {
		return &RequestError{Field: "query", Msg: "must not be empty"}
	}
	for _, name := range req.Answerers {
		if !slices.Contains(m.names, name) {
			known := slices.Contains(KnownAnswerers, name)
			if known {
				return &RequestError{Field: "answerers", Msg: fmt.Sprintf("%q is not enabled on this server (enabled: %s)", name, strings.Join(m.names, ", "))}
			}
			return &RequestError{Field: "answerers", Msg: fmt.Sprintf("unknown answerer %q (enabled: %s)", name, strings.Join(m.names, ", "))}
		}
	}
	if req.Answerers != nil && len(req.Answerers) == 0 {
		return &RequestError{Field: "answerers", Msg: "must name at least one answerer, or be left out for the default: " + strings.Join(m.names, ", ")}
	}
	switch req.Fusion {
	case "", FusionAnswers, FusionContext:
	default:
		return &RequestError{Field: "fusion", Msg: fmt.Sprintf("%q unknown; allowed: answers, context", req.Fusion)}
	}
	if req.PromptName != "" {
		mode := req.Fusion
		if mode == "" {
			mode = m.cfg.Fusion
		}
		var fit []string
		for _, n := range prompts.Names(PromptGroup) {
			if contextPrompt(n) == (mode == FusionContext) {
				fit = append(fit, n)
			}
		}
		if !slices.Contains(fit, req.PromptName) {
			return &RequestError{Field: "prompt_name", Msg: fmt.Sprintf("%q is not a %s-mode template; available: %s", req.PromptName, mode, strings.Join(fit, ", "))}
		}
	}
	return nil
}

// contextPrompt reports whether the mix_chat template called name is one
// for the "context" mode: by convention their names start with "context".
func contextPrompt(name string) bool { return strings.HasPrefix(name, FusionContext) }

// selected returns the answerers a request runs, in the deployment's order.
func (m *Mixer) selected(want []string) []string {
	if want == nil {
		return m.names
	}
	var out []string
	for _, n := range m.names {
		if slices.Contains(want, n) {
			out = append(out, n)
		}
	}
	return out
}

// TimeoutError is a step that ran out of its configured time.
type TimeoutError struct {
	Step  string // answerer name, "condense" or "fusion"
	After time.Duration
}

func (e *TimeoutError) Error() string { return fmt.Sprintf("%s timed out after %s", e.Step, e.After) }

// Unwrap makes a TimeoutError match context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// FailedError is returned when every answerer failed; it holds each one's
// error.
type FailedError struct {
	Outcomes []Outcome
}

func (e *FailedError) Error() string {
	parts := make([]string, len(e.Outcomes))
	for i, o := range e.Outcomes {
		parts[i] = o.From + ": " + o.Error
	}
	return "every answerer failed: " + strings.Join(parts, "; ")
}

// Unwrap returns each answerer's error.
func (e *FailedError) Unwrap() []error {
	errs := make([]error, len(e.Outcomes))
	for i, o := range e.Outcomes {
		errs[i] = o.Err
	}
	return errs
}

// emitter serialises events to the caller's callback and remembers the
// first error it returned, so one failed write stops all the work.
//
// The callback writes to a client, which may be slow or stop reading, so
// no emit waits for another's write: events go into a queue in the order
// they are emitted, and the caller that finds no write in progress writes
// them, including those queued meanwhile, until the queue is empty; the
// others queue theirs and go on. fn is still never called concurrently,
// and every event queued has been written (or the work stopped) by the
// time the last emit returns.
type emitter struct {
	fn     func(Event) error
	cancel context.CancelCauseFunc // cancels the request's work
	// start is when the request started.
	start time.Time

	mu      sync.Mutex
	queue   []Event
	spare   []Event // the last batch written, reused for the queue
	writing bool    // a caller is writing the queue
	err     error
	// firstText is when the first piece of text (an answer's or the
	// reply's) went out, after start.
	firstText time.Duration
}

func (e *emitter) emit(ev Event) error {
	if e.fn == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	e.queue = append(e.queue, ev)
	if e.writing {
		return nil // the caller writing sends it next, in order
	}
	e.writing = true
	for len(e.queue) > 0 && e.err == nil {
		batch := e.queue
		e.queue = e.spare[:0]
		e.mu.Unlock()
		err := e.write(batch)
		e.mu.Lock()
		clear(batch)
		e.spare = batch[:0]
		if err != nil {
			e.err = err
		}
	}
	e.queue, e.writing = e.queue[:0], false
	return e.err
}

// write sends batch through fn, outside the lock, and stops at the first
// error, cancelling the request's work.
func (e *emitter) write(batch []Event) error {
	for _, ev := range batch {
		if err := e.fn(ev); err != nil {
			e.cancel(err) // stop every call in flight, even one that ignores the error
			return err
		}
		if ev.Text != "" && (ev.Type == EventDelta || ev.Type == EventAnswerDelta) {
			e.mu.Lock()
			if e.firstText == 0 {
				e.firstText = time.Since(e.start)
			}
			e.mu.Unlock()
		}
	}
	return nil
}

// first returns when the first text went out (0: none yet).
func (e *emitter) first() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.firstText
}

// withTimeout bounds ctx by d (when d > 0) with a *TimeoutError as cause.
func withTimeout(ctx context.Context, d time.Duration, step string) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, &TimeoutError{Step: step, After: d})
}

// timedOut returns the *TimeoutError when ctx ran out of its own time (and
// not because parent was cancelled).
func timedOut(ctx, parent context.Context) *TimeoutError {
	var te *TimeoutError
	if parent.Err() == nil && errors.As(context.Cause(ctx), &te) {
		return te
	}
	return nil
}

// Mix answers req: it rewrites a follow-up question
// once, runs the selected answerers concurrently, each under its own
// timeout, and fuses their answers, reporting progress and streaming the
// reply through fn (which is never called concurrently; nil is allowed).
//
// An answerer that fails or times out is reported (a failed status event,
// the Outcome's Error) and the others go on; only when every one fails does
// Mix fail, with a *FailedError holding each cause. An error from fn or a
// cancelled ctx stops every call in flight and is returned. The Result is
// always returned, with what was produced so far.
func (m *Mixer) Mix(ctx context.Context, req Request, fn func(Event) error) (res Result, err error) {
	start := time.Now()
	res = Result{Question: req.Query.Text, Mode: req.Fusion}
	if res.Mode == "" {
		res.Mode = m.cfg.Fusion
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	em := &emitter{fn: fn, cancel: cancel, start: start}
	defer func() {
		res.Timings.Total = time.Since(start)
		res.Timings.FirstText = em.first()
		if fn == nil {
			res.Timings.FirstText = res.Timings.FirstToken
		}
	}()
	if err := m.Check(req); err != nil {
		return res, err
	}
	q := req.Query

	res.History = q.History

	names := m.selected(req.Answerers)
	// rewrote: the question was made to stand alone (or found to), so the
	// retrieving answerers need no history.
	rewrote := q.Standalone != ""
	if q.Standalone != "" {
		res.Standalone = q.Standalone // the caller rewrote it already
	} else if m.cfg.Condense && retrieves(names) {
		c, err := m.Condense(ctx, q.History, q.Text)
		rewrote = err == nil && m.condenser != nil
		res.Condensed = rewrote && hasDialog(q.History)
		res.Timings.Condense, res.CondenseUsage = c.Elapsed, c.Usage
		switch {
		case ctx.Err() != nil:
			return res, fmt.Errorf("condense question: %w", ctx.Err())
		case err != nil:
			// Retrieval goes on with the question as asked.
			res.CondenseError = err.Error()
			var te *TimeoutError
			ev := Event{Type: EventStatus, Answerer: "condense", State: StateFailed, Ms: c.Elapsed.Milliseconds(), Error: err.Error(), TimedOut: errors.As(err, &te)}
			if err := em.emit(ev); err != nil {
				return res, err
			}
		case c.Rewritten:
			q.Standalone = c.Standalone
			res.Standalone, res.Context = c.Standalone, c.Context
			if err := em.emit(Event{Type: EventStandalone, Text: c.Standalone, Ms: c.Elapsed.Milliseconds()}); err != nil {
				return res, err
			}
		default:
			res.Context = c.Context
		}
	}

	if res.Mode == FusionContext {
		err = m.answerFromContext(ctx, req, q, names, &res, em, start)
	} else {
		err = m.answerAndFuse(ctx, req, q, names, rewrote, &res, em, start)
	}
	res.Usage = res.CondenseUsage
	for _, o := range res.Answers {
		res.Usage = res.Usage.Add(o.Usage)
	}
	if res.Fused {
		res.Usage = res.Usage.Add(res.Response.Usage)
	}
	return res, err
}

// retrieves reports whether any of the answerers retrieves, so that a
// rewritten question would be used (the LLM-chat answerer sees the history
// instead).
func retrieves(names []string) bool {
	for _, n := range names {
		if n != rag.LLM {
			return true
		}
	}
	return false
}

// answererQuery is q as the answerer called name is asked: the retrieving
// answerers (which search with the standalone question) see the history
// only as mix.answerer_history says; by default none once the question
// was rewritten.
func (m *Mixer) answererQuery(q rag.Query, name string, rewrote bool) rag.Query {
	if name == rag.LLM {
		return q
	}
	if q.EvidenceTokens == 0 {
		q.EvidenceTokens = m.cfg.EvidenceTokens
	}
	switch m.cfg.AnswererHistory {
	case HistoryAll:
		return q
	case HistoryNone:
	default:
		if !rewrote {
			return q
		}
	}
	q.History = nil
	return q
}

// answerAndFuse is the "answers" mode: fan out, then fuse. Each answer
// streams as answer_delta events while it is written, so the first text
// reaches the client at the model's first-token time.
func (m *Mixer) answerAndFuse(ctx context.Context, req Request, q rag.Query, names []string, rewrote bool, res *Result, em *emitter, start time.Time) error {
	// With a single answerer its reply is the reply: stream it as it comes.
	direct := len(names) == 1 && em.fn != nil
	var streamed strings.Builder
	var deltas func(string) error
	if direct {
		deltas = func(d string) error {
			if streamed.Len() == 0 {
				res.Timings.FirstToken = time.Since(start)
			}
			streamed.WriteString(d)
			return em.emit(Event{Type: EventDelta, Text: d})
		}
	}
	t := time.Now()
	res.Answers = make([]Outcome, len(names))
	err := m.fanOut(ctx, names, res.Answers, em, func(ctx context.Context, name string, a rag.Answerer, o *Outcome) error {
		fn := deltas
		if !direct && em.fn != nil {
			fn = func(d string) error {
				if d == "" {
					return nil
				}
				return em.emit(Event{Type: EventAnswerDelta, Answerer: name, Text: d})
			}
		}
		ans, err := a.Answer(ctx, m.answererQuery(q, name, rewrote), fn)
		o.Text, o.Sources, o.Empty, o.Response = ans.Text, ans.Sources, ans.Empty, ans.Response
		return err
	}, !direct)
	res.Timings.Answers = time.Since(t)
	res.Docs = docsOf(res.Answers)
	if direct {
		o := res.Answers[0]
		res.Text, res.Response = streamed.String(), o.Response
		if o.OK() && o.Text != "" {
			res.Text = o.Text
		}
		if err == nil && !o.OK() {
			err = &FailedError{Outcomes: res.Answers}
		}
		if err != nil {
			return err
		}
		return em.emit(Event{Type: EventDocs, Docs: res.Docs})
	}
	if err != nil {
		return err
	}

	var ok, usable []Outcome
	for _, o := range res.Answers {
		if o.OK() {
			ok = append(ok, o)
			if !o.Empty && strings.TrimSpace(o.Text) != "" {
				usable = append(usable, o)
			}
		}
	}
	if len(ok) == 0 {
		return &FailedError{Outcomes: res.Answers}
	}
	if len(usable) == 0 {
		usable = ok
	}
	if len(usable) == 1 {
		return m.reply(usable[0], res, em, start)
	}
	err = m.fuse(ctx, req, q, usable, res, em, start)
	var fe *fusionError
	if errors.As(err, &fe) {
		// The fusion call failed before saying anything: the best single
		// answer is still an answer.
		res.FusionError = fe.err.Error()
		var te *TimeoutError
		ev := Event{Type: EventStatus, Answerer: "fusion", State: StateFailed, Ms: res.Timings.Fusion.Milliseconds(), Error: fe.err.Error(), TimedOut: errors.As(fe.err, &te)}
		if err := em.emit(ev); err != nil {
			return err
		}
		return m.reply(best(usable), res, em, start)
	}
	if err != nil {
		return err
	}
	return em.emit(Event{Type: EventDocs, Docs: res.Docs})
}

// reply sends one answer as the reply, unfused, its citation markers
// numbered as the turn's sources list is.
func (m *Mixer) reply(o Outcome, res *Result, em *emitter, start time.Time) error {
	o.Text = renumber(o.Text, sourceOffsets(res.Answers)[o.From], len(o.Sources))
	res.Text, res.Response, res.Fused = o.Text, o.Response, false
	res.Timings.FirstToken = time.Since(start)
	if err := em.emit(Event{Type: EventDelta, Text: o.Text}); err != nil {
		return err
	}
	return em.emit(Event{Type: EventDocs, Docs: res.Docs})
}

// best picks the answer to return unfused: the knowledge base's first, as
// the fusion rules prefer it, then the web's, then the model's own.
func best(os []Outcome) Outcome {
	for _, name := range []string{rag.KB, rag.Search, rag.LLM} {
		for _, o := range os {
			if o.From == name {
				return o
			}
		}
	}
	return os[0]
}

func docsOf(outs []Outcome) []rag.Doc {
	var docs []rag.Doc
	for _, o := range outs {
		docs = append(docs, rag.DocsOf(o.From, o.Sources)...)
	}
	return docs
}

// fanOut runs call for each named answerer concurrently, each under its own
// timeout and a context that an error from the emitter cancels, recording
// each outcome in its slot. Failures are recorded, not returned; fanOut
// returns an error only when the emitter or ctx stops the work. With
// answers set, each success is reported with an answer event.
func (m *Mixer) fanOut(ctx context.Context, names []string, outs []Outcome, em *emitter,
	call func(ctx context.Context, name string, a rag.Answerer, o *Outcome) error, answers bool) error {
	g, gctx := errgroup.WithContext(ctx)
	for i, name := range names {
		g.Go(func() error {
			o := &outs[i]
			o.From = name
			if err := em.emit(Event{Type: EventStatus, Answerer: name, State: StateStarted}); err != nil {
				return err
			}
			actx, cancel := withTimeout(gctx, m.cfg.Timeouts.For(name), name)
			defer cancel()
			t := time.Now()
			err := safeCall(func() error { return call(actx, name, m.answerers[name], o) })
			o.Elapsed = time.Since(t)
			o.Ms = o.Elapsed.Milliseconds()
			o.Model, o.Extractive, o.Usage = o.Response.Model, o.Response.Extractive, o.Response.Usage
			if err != nil {
				if gctx.Err() != nil {
					// The request is over (client gone, or another
					// goroutine's emit failed): not this answerer's fault.
					o.Err, o.Error = err, err.Error()
					return context.Cause(gctx)
				}
				if te := timedOut(actx, gctx); te != nil {
					err = te
					o.TimedOut = true
				}
				o.Err, o.Error = err, err.Error()
				return em.emit(Event{Type: EventStatus, Answerer: name, State: StateFailed, Ms: o.Ms, Error: o.Error, TimedOut: o.TimedOut})
			}
			if err := em.emit(Event{Type: EventStatus, Answerer: name, State: StateDone, Ms: o.Ms, Empty: o.Empty}); err != nil {
				return err
			}
			if answers && o.Text != "" {
				return em.emit(Event{Type: EventAnswer, Answerer: name, Text: o.Text, Empty: o.Empty})
			}
			return nil
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("mix: %w", context.Cause(ctx))
	}
	return err
}

// safeCall runs f, turning a panic into an error: a panicking answerer
// fails alone instead of taking the process down from a goroutine no
// handler recovers.
func safeCall(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return f()
}

// fusionError marks a fusion call that failed before producing any text.
type fusionError struct{ err error }

func (e *fusionError) Error() string { return "fuse answers: " + e.err.Error() }
func (e *fusionError) Unwrap() error { return e.err }

// fuse streams the fusion of answers as the reply.
func (m *Mixer) fuse(ctx context.Context, req Request, q rag.Query, answers []Outcome, res *Result, em *emitter, start time.Time) error {
	name := req.PromptName
	if name == "" {
		name = m.cfg.Prompt
	}
	data := m.promptData(q, res)
	// Each answer's citation markers are renumbered into the turn's
	// sources list, the one the client sees, so that the fused reply's
	// markers (kept by the prompt's rule) point into it.
	offs := sourceOffsets(res.Answers)
	texts := make([]string, len(answers))
	for i, o := range answers {
		texts[i] = renumber(strings.TrimSpace(o.Text), offs[o.From], len(o.Sources))
		data.Answers = append(data.Answers, PromptAnswer{N: i + 1, From: o.From, Text: texts[i], Sources: o.Sources})
	}
	prompt, err := prompts.Render(PromptGroup, name, data)
	if err != nil {
		return err
	}
	g := llm.Grounding{Question: q.Retrieval(), Asked: q.Text, History: data.Dialog}
	for i, o := range answers {
		g.Answers = append(g.Answers, llm.Draft{From: o.From, Text: texts[i], Refusal: o.Empty || o.Response.NothingFound})
	}
	return m.generate(ctx, req, q, prompt, g, res, em, start)
}

// generate makes the one streamed call that produces the reply (fusion, or
// the context-mode answer). A failure before any text is a *fusionError.
// g is the material the prompt was rendered from.
func (m *Mixer) generate(ctx context.Context, req Request, q rag.Query, prompt string, g llm.Grounding, res *Result, em *emitter, start time.Time) error {
	modelName := m.cfg.FusionModel
	if modelName == "" {
		modelName = q.Model
	}
	model, resolved, err := m.models.Get(modelName)
	if err != nil {
		return err
	}
	lreq := llm.Request{
		Model:       resolved,
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		Temperature: q.Temperature,
		MaxTokens:   q.MaxTokens,
	}
	if m.cfg.FusionTemperature != nil {
		lreq.Temperature = m.cfg.FusionTemperature
	}
	if m.cfg.FusionMaxTokens > 0 {
		lreq.MaxTokens = m.cfg.FusionMaxTokens
	}
	fctx, cancel := withTimeout(ctx, m.cfg.Timeouts.Fusion, "fusion")
	defer cancel()
	t := time.Now()
	var b strings.Builder
	var emitErr error
	var resp llm.Response
	gen := llm.AsGenerator(model)
	if em.fn == nil {
		resp, err = gen.Generate(fctx, lreq, g, nil)
		if err == nil {
			res.Timings.FirstToken = time.Since(start)
		}
	} else {
		resp, err = gen.Generate(fctx, lreq, g, func(d string) error {
			if b.Len() == 0 && d != "" {
				res.Timings.FirstToken = time.Since(start)
			}
			b.WriteString(d)
			if emitErr = em.emit(Event{Type: EventDelta, Text: d}); emitErr != nil {
				return emitErr
			}
			return nil
		})
	}
	res.Timings.Fusion = time.Since(t)
	res.Response, res.Fused = resp, true
	res.Text = b.String()
	if err == nil && resp.Text != "" {
		res.Text = resp.Text
	}
	switch {
	case err == nil:
		return nil
	case emitErr != nil:
		return emitErr
	case ctx.Err() != nil:
		return fmt.Errorf("fuse answers: %w", context.Cause(ctx))
	}
	if te := timedOut(fctx, ctx); te != nil {
		err = te
	}
	if b.Len() == 0 {
		res.Fused = false
		return &fusionError{err: err}
	}
	return fmt.Errorf("fuse answers: %w", err)
}

// answerFromContext is the "context" mode: gather the retrievers' evidence
// concurrently, then answer with one call over it and the history.
func (m *Mixer) answerFromContext(ctx context.Context, req Request, q rag.Query, names []string, res *Result, em *emitter, start time.Time) error {
	var retrievers []string
	for _, n := range names {
		if _, ok := m.answerers[n].(rag.Retriever); ok {
			retrievers = append(retrievers, n)
		}
	}
	t := time.Now()
	res.Answers = make([]Outcome, len(retrievers))
	err := m.fanOut(ctx, retrievers, res.Answers, em, func(ctx context.Context, name string, a rag.Answerer, o *Outcome) error {
		srcs, err := a.(rag.Retriever).Retrieve(ctx, q)
		o.Sources, o.Empty = srcs, len(srcs) == 0
		return err
	}, false)
	res.Timings.Answers = time.Since(t)
	res.Docs = docsOf(res.Answers)
	if err != nil {
		return err
	}
	failed := 0
	for _, o := range res.Answers {
		if !o.OK() {
			failed++
		}
	}
	if len(retrievers) > 0 && failed == len(retrievers) && !slices.Contains(names, rag.LLM) {
		// Nothing to answer from and the model's own knowledge is off.
		return &FailedError{Outcomes: res.Answers}
	}
	name := req.PromptName
	if name == "" {
		name = m.cfg.ContextPrompt
	}
	data := m.promptData(q, res)
	var docs []rag.Doc
	var texts, seen []string
	var ns []int // each passage's number: its place in res.Docs, the list the client sees
	for j, d := range res.Docs {
		text := strings.TrimSpace(d.Snippet)
		if text == "" || shared(seen, text) {
			// The same passage found by the knowledge base and the
			// search (a local engine over the same documents) is shown
			// once.
			continue
		}
		seen = append(seen, strings.Join(strings.Fields(text), " "))
		docs = append(docs, d)
		texts = append(texts, text)
		ns = append(ns, j+1)
	}
	g := llm.Grounding{Question: q.Retrieval(), Asked: q.Text, History: data.Dialog}
	for i, text := range rag.FitEvidence(texts, m.cfg.EvidenceTokens) {
		d := docs[i]
		p := PromptPassage{N: ns[i], Title: d.Title, URL: promptURL(d.URL), Text: text}
		if d.From == rag.KB {
			data.KB = append(data.KB, p)
		} else {
			data.Web = append(data.Web, p)
		}
		g.Evidence = append(g.Evidence, llm.Evidence{ID: p.N, Title: d.Title, Path: d.Path, Text: text, From: d.From, Match: d.Match, Profile: d.Profile})
	}
	prompt, err := prompts.Render(PromptGroup, name, data)
	if err != nil {
		return err
	}
	err = m.generate(ctx, req, q, prompt, g, res, em, start)
	var fe *fusionError
	if errors.As(err, &fe) {
		err = fe.err
	}
	if err != nil {
		return err
	}
	return em.emit(Event{Type: EventDocs, Docs: res.Docs})
}

// shared reports whether text, whitespace aside, is one of seen or part of
// one of them.
func shared(seen []string, text string) bool {
	t := strings.Join(strings.Fields(text), " ")
	for _, s := range seen {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}
