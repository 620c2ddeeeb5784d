package obs

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mixchat/mixchat/pkg/rag"
)

// Answerer wraps a, the answerer called name ("llm", "kb", "search"), so
// each call is measured (mixchat_answerer_duration_seconds,
// mixchat_answerer_failures_total), traced (a span "answerer NAME" that the
// call's model spans are children of) and logged. An answerer that also
// retrieves (a rag.Retriever: kb, search) keeps that ability, and its
// retrieval time is measured as the time from the start of Answer to its
// first model call (or to its end when it calls no model, e.g. nothing was
// found), with a span "retrieve NAME"; Retrieve calls are measured whole.
// A nil a is returned as nil, so the Mixer still sees a missing answerer.
func (o *Observer) Answerer(name string, a rag.Answerer) rag.Answerer {
	if a == nil {
		return nil
	}
	w := &answerer{o: o, name: name, a: a}
	if r, ok := a.(rag.Retriever); ok {
		return &retrievingAnswerer{answerer: w, r: r}
	}
	return w
}

type answerer struct {
	o    *Observer
	name string
	a    rag.Answerer
}

func (w *answerer) Answer(ctx context.Context, q rag.Query, fn func(delta string) error) (rag.Answer, error) {
	return w.answer(ctx, q, fn, false)
}

func (w *answerer) answer(ctx context.Context, q rag.Query, fn func(delta string) error, retrieves bool) (rag.Answer, error) {
	start := time.Now()
	ctx, span := w.o.tracer.Start(ctx, "answerer "+w.name, trace.WithAttributes(attribute.String("mixchat.answerer", w.name)))
	var st *stage
	if retrieves {
		st = w.startRetrieval(ctx, start)
		ctx = context.WithValue(ctx, stageKey{}, st)
	}
	ans, err := w.a.Answer(ctx, q, fn)
	if st != nil {
		st.done(ctx, err)
	}
	d := time.Since(start)
	out := outcome(ctx, err)
	met := w.o.metrics
	met.answerers.WithLabelValues(w.name, out).Observe(d.Seconds())
	if out == OutcomeError || out == OutcomeTimeout {
		met.answerFailures.WithLabelValues(w.name, out).Inc()
	}
	span.SetAttributes(
		attribute.String("mixchat.outcome", out),
		attribute.Bool("mixchat.answer.empty", ans.Empty),
		attribute.Int("mixchat.answer.sources", len(ans.Sources)),
		attribute.String("gen_ai.response.model", ans.Response.Model),
	)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	ms := float64(d.Microseconds()) / 1000
	if out == OutcomeError || out == OutcomeTimeout {
		w.o.log.WarnContext(ctx, "answerer failed", "answerer", w.name, "outcome", out, "ms", ms, "err", err)
	} else {
		w.o.log.DebugContext(ctx, "answerer done", "answerer", w.name, "outcome", out, "ms", ms,
			"empty", ans.Empty, "sources", len(ans.Sources))
	}
	return ans, err
}

// retrievingAnswerer is an answerer that is also a rag.Retriever.
type retrievingAnswerer struct {
	*answerer
	r rag.Retriever
}

func (w *retrievingAnswerer) Answer(ctx context.Context, q rag.Query, fn func(delta string) error) (rag.Answer, error) {
	return w.answer(ctx, q, fn, true)
}

func (w *retrievingAnswerer) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	start := time.Now()
	st := w.startRetrieval(ctx, start)
	srcs, err := w.r.Retrieve(ctx, q)
	st.done(ctx, err)
	return srcs, err
}

// stage is the retrieval part of one answer: it ends at the answerer's
// first model call or with the answer.
type stage struct {
	once  sync.Once
	start time.Time
	span  trace.Span
	w     *answerer
}

type stageKey struct{}

func (w *answerer) startRetrieval(ctx context.Context, start time.Time) *stage {
	_, span := w.o.tracer.Start(ctx, "retrieve "+w.name, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("mixchat.answerer", w.name)))
	return &stage{start: start, span: span, w: w}
}

// done ends the retrieval, once, with err's outcome.
func (s *stage) done(ctx context.Context, err error) {
	s.once.Do(func() {
		out := outcome(ctx, err)
		s.w.o.metrics.retrieval.WithLabelValues(s.w.name, out).Observe(time.Since(s.start).Seconds())
		s.span.SetAttributes(attribute.String("mixchat.outcome", out))
		if err != nil {
			s.span.RecordError(err)
			s.span.SetStatus(codes.Error, err.Error())
		}
		s.span.End()
	})
}

// markRetrieved ends the retrieval stage ctx carries, if any: a model call
// has started, so the evidence is in.
func markRetrieved(ctx context.Context) {
	if s, ok := ctx.Value(stageKey{}).(*stage); ok {
		s.done(ctx, nil)
	}
}
