package mix_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/leaktest"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

// The memory manager is the Mixer's condenser in mixchat (pkg/turn recalls
// the history the Mixer is given).
var (
	_ mix.Condenser      = (*memory.Manager)(nil)
	_ mix.UsageCondenser = (*memory.Manager)(nil)
)

// fakeModel is an llm.Model whose replies a test scripts with a function.
type fakeModel struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply func(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error)
}

func (f *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f.Stream(ctx, req, nil)
}

func (f *fakeModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if fn == nil {
		fn = func(string) error { return nil }
	}
	return f.reply(ctx, req, fn)
}

func (f *fakeModel) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// streamText streams text in pieces of a few runes, like a model.
func streamText(ctx context.Context, text string, fn func(string) error) (llm.Response, error) {
	rs := []rune(text)
	var sent strings.Builder
	for i := 0; i < len(rs); i += 4 {
		if err := ctx.Err(); err != nil {
			return llm.Response{Text: sent.String()}, err
		}
		piece := string(rs[i:min(i+4, len(rs))])
		if err := fn(piece); err != nil {
			return llm.Response{Text: sent.String()}, err
		}
		sent.WriteString(piece)
	}
	return llm.Response{Text: text, Model: "fuser", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}, nil
}

const fused = "乾卦象征天，刚健不息（据知识库）。"

// fuser is a fusion model that streams fused.
func fuser() *fakeModel {
	return &fakeModel{reply: func(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
		return streamText(ctx, fused, fn)
	}}
}

func registry(m llm.Model) *llm.Registry {
	r := llm.NewRegistry("fuser")
	r.Add("fuser", m)
	return r
}

// answer returns an answerer that answers text as from.
func answer(from, text string, srcs ...rag.Source) rag.Answerer {
	return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		return rag.Answer{From: from, Text: text, Sources: srcs,
			Response: llm.Response{Text: text, Model: "m-" + from, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}}, nil
	})
}

func failing(err error) rag.Answerer {
	return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		return rag.Answer{}, err
	})
}

// hanging answers only when its context ends, and records that it did.
func hanging(done *atomic.Bool) rag.Answerer {
	return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		<-ctx.Done()
		done.Store(true)
		return rag.Answer{}, fmt.Errorf("search: %w", ctx.Err())
	})
}

func three() map[string]rag.Answerer {
	return map[string]rag.Answerer{
		rag.LLM:    answer(rag.LLM, "乾为天，六爻皆阳。"),
		rag.KB:     answer(rag.KB, "《周易》：乾，元亨利贞。", rag.Source{Title: "周易·乾", Snippet: "乾，元亨利贞。", KB: "zhouyi", File: "zhouyi.txt", Score: 0.9}),
		rag.Search: answer(rag.Search, "网上说乾卦代表天。", rag.Source{Title: "乾卦", URL: "https://example.org/qian", Snippet: "乾卦代表天"}),
	}
}

func newMixer(t *testing.T, cfg mix.Config, deps mix.Deps) *mix.Mixer {
	t.Helper()
	m, err := mix.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []mix.Event
}

func (r *recorder) fn(ev mix.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) of(typ string) []mix.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []mix.Event
	for _, e := range r.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) text() string {
	var b strings.Builder
	for _, e := range r.of(mix.EventDelta) {
		b.WriteString(e.Text)
	}
	return b.String()
}

func status(r *recorder, answerer, state string) (mix.Event, bool) {
	for _, e := range r.of(mix.EventStatus) {
		if e.Answerer == answerer && e.State == state {
			return e, true
		}
	}
	return mix.Event{}, false
}

func question(text string) mix.Request { return mix.Request{Query: rag.Query{Text: text}} }

// TestMixConcurrent checks that the three answerers run at the same time:
// each waits until all three have started, which a sequential run never
// reaches.
func TestMixConcurrent(t *testing.T) {
	var started atomic.Int32
	all := make(chan struct{})
	barrier := func(from, text string) rag.Answerer {
		return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			if started.Add(1) == 3 {
				close(all)
			}
			select {
			case <-all:
				return rag.Answer{From: from, Text: text}, nil
			case <-time.After(5 * time.Second):
				return rag.Answer{}, errors.New(from + " waited 5s for the others to start: answerers are not concurrent")
			case <-ctx.Done():
				return rag.Answer{}, ctx.Err()
			}
		})
	}
	model := fuser()
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: map[string]rag.Answerer{
		rag.LLM: barrier(rag.LLM, "大模型的回答"), rag.KB: barrier(rag.KB, "知识库的回答"), rag.Search: barrier(rag.Search, "搜索的回答"),
	}})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Answers {
		if !o.OK() {
			t.Errorf("%s: %v", o.From, o.Err)
		}
	}
	// Every started event comes before any done event.
	lastStart, firstDone := -1, len(rec.events)
	for i, e := range rec.events {
		if e.Type == mix.EventStatus && e.State == mix.StateStarted {
			lastStart = i
		}
		if e.Type == mix.EventStatus && e.State == mix.StateDone && i < firstDone {
			firstDone = i
		}
	}
	if lastStart > firstDone {
		t.Errorf("an answerer finished (event %d) before the last one started (event %d)", firstDone, lastStart)
	}
	if !res.Fused || res.Text != fused || rec.text() != fused {
		t.Errorf("reply = %q (fused %v), streamed %q; want %q fused", res.Text, res.Fused, rec.text(), fused)
	}
	if got := len(rec.of(mix.EventAnswer)); got != 3 {
		t.Errorf("%d answer events, want 3", got)
	}
	// Results sit in the deployment's order whatever order they finished in.
	if got := []string{res.Answers[0].From, res.Answers[1].From, res.Answers[2].From}; !slices.Equal(got, []string{"llm", "kb", "search"}) {
		t.Errorf("answers in order %v", got)
	}
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d fusion calls, want 1", len(reqs))
	}
	prompt := reqs[0].Messages[0].Content
	for _, want := range []string{mix.DefaultPersona, "乾卦是什么意思？", "大模型的回答", "知识库的回答", "搜索的回答", "来源：知识库", "来源：网络搜索", "来源：大模型自身知识", "以知识库为准"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("fusion prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestMixOneFails(t *testing.T) {
	answerers := three()
	answerers[rag.KB] = failing(&llm.StatusError{Op: "chat", Model: "m", StatusCode: 500, Body: "boom"})
	model := fuser()
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: answerers})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := status(&rec, rag.KB, mix.StateFailed)
	if !ok || !strings.Contains(ev.Error, "status 500") || ev.TimedOut {
		t.Errorf("kb failed event = %+v (found %v)", ev, ok)
	}
	if res.Answers[1].OK() || !strings.Contains(res.Answers[1].Error, "boom") {
		t.Errorf("kb outcome = %+v", res.Answers[1])
	}
	if !res.Fused || res.Text != fused {
		t.Errorf("reply %q fused=%v; want the fusion of the other two", res.Text, res.Fused)
	}
	prompt := model.requests()[0].Messages[0].Content
	if strings.Contains(prompt, "来源：知识库") || !strings.Contains(prompt, "乾为天") || !strings.Contains(prompt, "网上说") {
		t.Errorf("fusion prompt should hold the llm and search answers only:\n%s", prompt)
	}
	if rec := res.Record(); !slices.Equal(rec["failed"].([]string), []string{"kb"}) {
		t.Errorf("record failed = %v", rec["failed"])
	}
	// Usage adds up the two answers and the fusion call.
	if res.Usage.TotalTokens != 15+15+110 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

func TestMixOneTimesOut(t *testing.T) {
	cfg := mix.DefaultConfig()
	cfg.Timeouts.Answerers[rag.Search] = 50 * time.Millisecond
	var cancelled atomic.Bool
	answerers := three()
	answerers[rag.Search] = hanging(&cancelled)
	m := newMixer(t, cfg, mix.Deps{Models: registry(fuser()), Answerers: answerers})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if !cancelled.Load() {
		t.Error("the slow answerer's context was not cancelled")
	}
	ev, ok := status(&rec, rag.Search, mix.StateFailed)
	if !ok || !ev.TimedOut || !strings.Contains(ev.Error, "search timed out after 50ms") {
		t.Errorf("search failed event = %+v (found %v)", ev, ok)
	}
	o := res.Answers[2]
	var te *mix.TimeoutError
	if !o.TimedOut || !errors.As(o.Err, &te) || !errors.Is(o.Err, context.DeadlineExceeded) {
		t.Errorf("search outcome = %+v", o)
	}
	if !res.Fused || res.Text != fused {
		t.Errorf("fusion did not go on: %q", res.Text)
	}
}

func TestMixAllFail(t *testing.T) {
	cfg := mix.DefaultConfig()
	cfg.Timeouts.Answerers[rag.Search] = 20 * time.Millisecond
	var cancelled atomic.Bool
	errLLM := &llm.StatusError{Op: "chat", Model: "m", StatusCode: 429, Body: "slow down"}
	errKB := errors.New("knowledge base zhouyi not found")
	model := fuser()
	m := newMixer(t, cfg, mix.Deps{Models: registry(model), Answerers: map[string]rag.Answerer{
		rag.LLM: failing(errLLM), rag.KB: failing(errKB), rag.Search: hanging(&cancelled),
	}})
	var rec recorder
	_, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	var fe *mix.FailedError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a *mix.FailedError", err)
	}
	if !errors.Is(err, errLLM) || !errors.Is(err, errKB) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err does not hold every cause: %v", err)
	}
	for _, want := range []string{"llm: ", "429", "kb: knowledge base zhouyi not found", "search: search timed out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := len(model.requests()); n != 0 {
		t.Errorf("%d fusion calls after every answerer failed", n)
	}
	if got := len(rec.of(mix.EventDelta)); got != 0 {
		t.Errorf("%d deltas sent", got)
	}
}

func TestMixSkipsFusionForOneAnswer(t *testing.T) {
	model := fuser()
	answerers := three()
	answerers[rag.LLM] = failing(errors.New("down"))
	answerers[rag.Search] = failing(errors.New("down"))
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: answerers})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fused || res.Text != "《周易》：乾，元亨利贞。" || rec.text() != res.Text || len(model.requests()) != 0 {
		t.Errorf("reply %q fused=%v streamed %q, %d model calls; want the kb answer as is", res.Text, res.Fused, rec.text(), len(model.requests()))
	}
	docs := rec.of(mix.EventDocs)
	if len(docs) != 1 || len(docs[0].Docs) != 1 || docs[0].Docs[0].From != rag.KB || docs[0].Docs[0].KB != "zhouyi" {
		t.Errorf("docs events = %+v", docs)
	}
}

func TestMixLeavesOutEmptyAnswers(t *testing.T) {
	model := fuser()
	answerers := three()
	answerers[rag.KB] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		return rag.Answer{From: rag.KB, Text: "知识库中没有找到相关内容。", Empty: true}, nil
	})
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: answerers})
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt := model.requests()[0].Messages[0].Content
	if strings.Contains(prompt, "知识库中没有找到") || !res.Answers[1].Empty {
		t.Errorf("the empty kb answer reached the fusion prompt:\n%s", prompt)
	}
}

// TestMixSingleAnswererStreams checks that a request for one answerer gets
// its reply streamed as it comes, with no fusion call.
func TestMixSingleAnswererStreams(t *testing.T) {
	model := fuser()
	answerers := three()
	answerers[rag.LLM] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		for _, p := range []string{"乾", "为", "天"} {
			if err := fn(p); err != nil {
				return rag.Answer{}, err
			}
		}
		return rag.Answer{From: rag.LLM, Text: "乾为天"}, nil
	})
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: answerers})
	var rec recorder
	req := question("乾卦是什么？")
	req.Answerers = []string{rag.LLM}
	res, err := m.Mix(context.Background(), req, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rec.of(mix.EventDelta)); got != 3 || res.Text != "乾为天" || res.Fused || len(model.requests()) != 0 {
		t.Errorf("%d deltas, reply %q, fused %v, %d model calls", got, res.Text, res.Fused, len(model.requests()))
	}
	if len(res.Answers) != 1 || len(rec.of(mix.EventAnswer)) != 0 {
		t.Errorf("answers %+v, %d answer events", res.Answers, len(rec.of(mix.EventAnswer)))
	}
}

func TestMixFusionFailsFallsBackToKB(t *testing.T) {
	model := &fakeModel{reply: func(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
		return llm.Response{}, &llm.StatusError{Op: "stream", Model: "fuser", StatusCode: 503}
	}}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: three()})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fused || res.Text != "《周易》：乾，元亨利贞。" || rec.text() != res.Text {
		t.Errorf("reply %q fused=%v; want the kb answer", res.Text, res.Fused)
	}
	if ev, ok := status(&rec, "fusion", mix.StateFailed); !ok || !strings.Contains(ev.Error, "503") || !strings.Contains(res.FusionError, "503") {
		t.Errorf("fusion failure not reported: %+v, %q", ev, res.FusionError)
	}
}

func TestMixAnswererPanics(t *testing.T) {
	answerers := three()
	answerers[rag.Search] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		panic("index out of range")
	})
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: answerers})
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Answers[2]; o.OK() || !strings.Contains(o.Error, "panic: index out of range") {
		t.Errorf("search outcome = %+v", o)
	}
}

// TestMixFollowUp checks that a follow-up question is rewritten once and
// that the rewrite feeds retrieval while the LLM-chat answerer sees the
// history.
func TestMixFollowUp(t *testing.T) {
	history := []llm.Message{{Role: llm.RoleUser, Content: "乾卦是什么？"}, {Role: llm.RoleAssistant, Content: "乾卦是六十四卦的第一卦。"}}
	var condensed atomic.Int32
	condenser := mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
		condensed.Add(1)
		if len(h) != 2 || q != "它的卦辞是什么？" {
			return "", "", fmt.Errorf("condense got history %v, question %q", h, q)
		}
		return "乾卦的卦辞是什么？", "用户在问乾卦。", nil
	})
	var mu sync.Mutex
	seen := map[string]rag.Query{}
	spy := func(from string) rag.Answerer {
		return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			mu.Lock()
			seen[from] = q
			mu.Unlock()
			return rag.Answer{From: from, Text: from + "：元亨利贞"}, nil
		})
	}
	model := fuser()
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Condenser: condenser,
		Answerers: map[string]rag.Answerer{rag.LLM: spy(rag.LLM), rag.KB: spy(rag.KB), rag.Search: spy(rag.Search)}})
	var rec recorder
	res, err := m.Mix(context.Background(), mix.Request{Query: rag.Query{Text: "它的卦辞是什么？", History: history}}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if condensed.Load() != 1 {
		t.Errorf("condensed %d times, want once", condensed.Load())
	}
	for _, from := range []string{rag.KB, rag.Search} {
		if got := seen[from].Retrieval(); got != "乾卦的卦辞是什么？" {
			t.Errorf("%s retrieved with %q, want the standalone question", from, got)
		}
	}
	if q := seen[rag.LLM]; q.Text != "它的卦辞是什么？" || len(q.History) != 2 {
		t.Errorf("llm answerer got %q with %d history messages; want the question as asked and the history", q.Text, len(q.History))
	}
	if res.Standalone != "乾卦的卦辞是什么？" || res.Context != "用户在问乾卦。" {
		t.Errorf("result standalone %q context %q", res.Standalone, res.Context)
	}
	if evs := rec.of(mix.EventStandalone); len(evs) != 1 || evs[0].Text != "乾卦的卦辞是什么？" {
		t.Errorf("standalone events = %+v", evs)
	}
	prompt := model.requests()[0].Messages[0].Content
	if !strings.Contains(prompt, "它的卦辞是什么？") || !strings.Contains(prompt, "即：乾卦的卦辞是什么？") || !strings.Contains(prompt, "用户在问乾卦。") {
		t.Errorf("fusion prompt lacks the question, its rewrite or the context:\n%s", prompt)
	}
	if got := res.Record()["standalone"]; got != "乾卦的卦辞是什么？" {
		t.Errorf("record standalone = %v", got)
	}
}

func TestMixCondenseFailsGoesOn(t *testing.T) {
	cfg := mix.DefaultConfig()
	cfg.Timeouts.Condense = 20 * time.Millisecond
	condenser := mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
		<-ctx.Done()
		return "", "", ctx.Err()
	})
	var retrieval atomic.Value
	answerers := three()
	answerers[rag.KB] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		retrieval.Store(q.Retrieval())
		return rag.Answer{From: rag.KB, Text: "元亨利贞"}, nil
	})
	m := newMixer(t, cfg, mix.Deps{Models: registry(fuser()), Condenser: condenser, Answerers: answerers})
	var rec recorder
	req := question("它的卦辞呢？")
	req.Query.History = []llm.Message{{Role: llm.RoleUser, Content: "乾卦"}, {Role: llm.RoleAssistant, Content: "乾为天"}}
	res, err := m.Mix(context.Background(), req, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := status(&rec, "condense", mix.StateFailed); !ok || !ev.TimedOut {
		t.Errorf("condense failure not reported: %+v", rec.events)
	}
	if retrieval.Load() != "它的卦辞呢？" || res.Standalone != "" || res.CondenseError == "" {
		t.Errorf("kb retrieved with %v; standalone %q; condense error %q", retrieval.Load(), res.Standalone, res.CondenseError)
	}
}

// TestMixCallbackErrorStopsEverything checks that a failed write (a client
// gone) cancels the fusion call and that Mix returns with no goroutine left.
func TestMixCallbackErrorStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	fusionCancelled := make(chan struct{})
	model := &fakeModel{reply: func(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
		_ = fn("乾")
		// Even a model that ignores fn's error stops: the Mixer cancels
		// the call.
		<-ctx.Done()
		close(fusionCancelled)
		return llm.Response{}, ctx.Err()
	}}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: three()})
	gone := errors.New("client gone")
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), func(ev mix.Event) error {
		if ev.Type == mix.EventDelta {
			return gone
		}
		return nil
	})
	if !errors.Is(err, gone) {
		t.Fatalf("err = %v, want the callback's error", err)
	}
	select {
	case <-fusionCancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the fusion call was not cancelled")
	}
	if res.Text != "乾" {
		t.Errorf("partial text = %q", res.Text)
	}
	leaktest.Wait(t, before)
}

// TestMixCancelledDuringFanOut cancels the request while the answerers run.
func TestMixCancelledDuringFanOut(t *testing.T) {
	before := runtime.NumGoroutine()
	var c1, c2 atomic.Bool
	answerers := three()
	answerers[rag.KB], answerers[rag.Search] = hanging(&c1), hanging(&c2)
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: answerers})
	ctx, cancel := context.WithCancel(context.Background())
	_, err := m.Mix(ctx, question("乾卦是什么意思？"), func(ev mix.Event) error {
		if ev.Type == mix.EventStatus && ev.State == mix.StateDone {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !c1.Load() || !c2.Load() {
		t.Error("answerers still running when Mix returned")
	}
	leaktest.Wait(t, before)
}

// retrieverAnswerer is an answerer that can also retrieve.
type retrieverAnswerer struct {
	rag.Answerer
	srcs []rag.Source
	err  error
	q    atomic.Value
}

func (r *retrieverAnswerer) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	r.q.Store(q)
	return r.srcs, r.err
}

func TestMixContextMode(t *testing.T) {
	model := fuser()
	called := errors.New("the answerer itself must not be called in context mode")
	kb := &retrieverAnswerer{Answerer: failing(called), srcs: []rag.Source{{Title: "周易·乾", Snippet: "乾，元亨利贞。", KB: "zhouyi"}}}
	web := &retrieverAnswerer{Answerer: failing(called), srcs: []rag.Source{{Title: "乾卦", URL: "https://example.org/qian", Snippet: "乾卦代表天。"}}}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model),
		Answerers: map[string]rag.Answerer{rag.LLM: failing(called), rag.KB: kb, rag.Search: web}})
	var rec recorder
	req := question("乾卦是什么意思？")
	req.Fusion = mix.FusionContext
	req.Query.History = []llm.Message{{Role: llm.RoleUser, Content: "你好"}, {Role: llm.RoleAssistant, Content: "你好，请问想了解哪一卦？"}}
	res, err := m.Mix(context.Background(), req, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want exactly 1", len(reqs))
	}
	prompt := reqs[0].Messages[0].Content
	for _, want := range []string{"【知识库资料】", "[1] 周易·乾", "乾，元亨利贞。", "【网络搜索资料】", "[2] 乾卦 <https://example.org/qian>", "专家：你好，请问想了解哪一卦？", "乾卦是什么意思？"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("context prompt lacks %q:\n%s", want, prompt)
		}
	}
	if len(rec.of(mix.EventAnswer)) != 0 || res.Mode != mix.FusionContext || res.Text != fused || len(res.Docs) != 2 {
		t.Errorf("mode %q text %q docs %d answer events %d", res.Mode, res.Text, len(res.Docs), len(rec.of(mix.EventAnswer)))
	}
	if !slices.Contains(reqs[0].Context, "乾，元亨利贞。") {
		t.Errorf("the passages are not hints for the offline model: %q", reqs[0].Context)
	}
}

func TestCheck(t *testing.T) {
	cfg := mix.DefaultConfig()
	cfg.Answerers = []string{rag.LLM, rag.KB}
	m := newMixer(t, cfg, mix.Deps{Models: registry(fuser()), Answerers: three()})
	if got := m.Answerers(); !slices.Equal(got, []string{"llm", "kb"}) {
		t.Errorf("Answerers() = %v", got)
	}
	for _, tc := range []struct {
		name string
		req  mix.Request
		want string // "" = valid
	}{
		{"ok", question("乾"), ""},
		{"empty query", question("  "), "query: must not be empty"},
		{"subset", mix.Request{Query: rag.Query{Text: "乾"}, Answerers: []string{"kb"}}, ""},
		{"disabled", mix.Request{Query: rag.Query{Text: "乾"}, Answerers: []string{"search"}}, `"search" is not enabled on this server (enabled: llm, kb)`},
		{"unknown", mix.Request{Query: rag.Query{Text: "乾"}, Answerers: []string{"bing"}}, `unknown answerer "bing"`},
		{"none", mix.Request{Query: rag.Query{Text: "乾"}, Answerers: []string{}}, "must name at least one answerer"},
		{"fusion", mix.Request{Query: rag.Query{Text: "乾"}, Fusion: "vote"}, `fusion: "vote" unknown`},
		{"prompt", mix.Request{Query: rag.Query{Text: "乾"}, PromptName: "en"}, ""},
		{"prompt of the other mode", mix.Request{Query: rag.Query{Text: "乾"}, PromptName: "context"}, `"context" is not a answers-mode template`},
		{"context prompt", mix.Request{Query: rag.Query{Text: "乾"}, Fusion: "context", PromptName: "context_en"}, ""},
		{"unknown prompt", mix.Request{Query: rag.Query{Text: "乾"}, PromptName: "nope"}, `prompt_name: "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Check(tc.req)
			var re *mix.RequestError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want a *RequestError containing %q", err, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := mix.New(mix.DefaultConfig(), mix.Deps{Answerers: three()}); err == nil {
		t.Error("New without models succeeded")
	}
	if _, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: registry(fuser())}); err == nil || !strings.Contains(err.Error(), "none of the enabled answerers") {
		t.Errorf("New without answerers: %v", err)
	}
	// An answerer the deployment lacks (no knowledge base: absent, or nil)
	// is off.
	m, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: map[string]rag.Answerer{rag.LLM: answer("llm", "x"), rag.KB: nil, rag.Search: answer("search", "y")}})
	if err != nil || !slices.Equal(m.Answerers(), []string{"llm", "search"}) {
		t.Errorf("New = %v, %v", m, err)
	}
}

func TestConfigValidate(t *testing.T) {
	neg := float32(-1)
	for _, tc := range []struct {
		name string
		edit func(*mix.Config)
		want string
	}{
		{"default", func(*mix.Config) {}, ""},
		{"no answerers", func(c *mix.Config) { c.Answerers = nil }, "mix.answerers"},
		{"unknown answerer", func(c *mix.Config) { c.Answerers = []string{"llm", "bing"} }, `mix.answerers[1]: "bing" is not valid; allowed: llm, kb, search`},
		{"twice", func(c *mix.Config) { c.Answerers = []string{"kb", "kb"} }, "listed twice"},
		{"timeout", func(c *mix.Config) { c.Timeouts.Answerers[rag.KB] = -time.Second }, "mix.timeouts.kb"},
		{"timeout of no answerer", func(c *mix.Config) { c.Timeouts.Answerers["bing"] = time.Second }, "mix.timeouts.bing: 1s is not valid; the keys are the answerers"},
		{"persona", func(c *mix.Config) { c.Persona = " " }, "mix.persona"},
		{"fusion", func(c *mix.Config) { c.Fusion = "vote" }, `mix.fusion: "vote" is not valid; allowed: answers, context`},
		{"temperature", func(c *mix.Config) { c.FusionTemperature = &neg }, "mix.fusion_temperature"},
		{"prompt", func(c *mix.Config) { c.Prompt = "context" }, "mix.prompt"},
		{"context prompt", func(c *mix.Config) { c.ContextPrompt = "nope" }, "mix.context_prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mix.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// usageCondenser is a Condenser that reports the tokens of its rewrite.
type usageCondenser struct{ plain atomic.Int32 }

func (c *usageCondenser) Condense(ctx context.Context, h []llm.Message, q string) (string, string, error) {
	c.plain.Add(1)
	return "乾卦的卦辞是什么？", "", nil
}

func (c *usageCondenser) CondenseUsage(ctx context.Context, h []llm.Message, q string) (string, string, llm.Usage, error) {
	return "乾卦的卦辞是什么？", "用户在问乾卦。", llm.Usage{PromptTokens: 40, CompletionTokens: 7, TotalTokens: 47}, nil
}

// TestMixCountsCondenseUsage checks that the rewrite's tokens, when the
// Condenser reports them, are part of the request's usage and record.
func TestMixCountsCondenseUsage(t *testing.T) {
	c := &usageCondenser{}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: three(), Condenser: c})
	req := question("它的卦辞呢？")
	req.Query.History = []llm.Message{{Role: llm.RoleUser, Content: "乾卦是什么？"}, {Role: llm.RoleAssistant, Content: "乾为天。"}}
	res, err := m.Mix(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.plain.Load() != 0 {
		t.Error("Condense was called although the Condenser reports usage")
	}
	if res.Standalone != "乾卦的卦辞是什么？" || res.CondenseUsage.TotalTokens != 47 {
		t.Errorf("standalone %q, condense usage %+v", res.Standalone, res.CondenseUsage)
	}
	// Three answers of 15 tokens, the fusion call's 110, the rewrite's 47.
	if res.Usage.TotalTokens != 3*15+110+47 || res.Usage.PromptTokens != 3*10+100+40 {
		t.Errorf("usage = %+v", res.Usage)
	}
	if u, ok := res.Record()["condense_usage"].(llm.Usage); !ok || u.TotalTokens != 47 {
		t.Errorf("record condense_usage = %v", res.Record()["condense_usage"])
	}
	cd, err := m.Condense(context.Background(), req.Query.History, req.Query.Text)
	if err != nil || cd.Usage.TotalTokens != 47 || cd.Context != "用户在问乾卦。" {
		t.Errorf("Condense = %+v, %v", cd, err)
	}
}

// TestMixSlowWriteHoldsNoOtherAnswerer: while the callback is stuck
// writing one answerer's event (a client that stopped reading), another
// answerer's events are queued and it goes on; every event reaches the
// callback in order once the write ends, and the callback is never called
// concurrently.
func TestMixSlowWriteHoldsNoOtherAnswerer(t *testing.T) {
	blocked, release, llmDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	answerers := three()
	answerers[rag.KB] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		if err := fn("k1"); err != nil {
			return rag.Answer{}, err
		}
		return rag.Answer{From: rag.KB, Text: "k1"}, nil
	})
	answerers[rag.LLM] = rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		defer close(llmDone)
		<-blocked
		for _, d := range []string{"l1", "l2"} {
			if err := fn(d); err != nil {
				return rag.Answer{}, err
			}
		}
		return rag.Answer{From: rag.LLM, Text: "l1l2"}, nil
	})
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: answerers})
	var rec recorder
	var inFn atomic.Int32
	fn := func(ev mix.Event) error {
		if inFn.Add(1) > 1 {
			t.Error("the callback is called concurrently")
		}
		defer inFn.Add(-1)
		if ev.Type == mix.EventAnswerDelta && ev.Text == "k1" {
			close(blocked)
			<-release
		}
		return rec.fn(ev)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Mix(context.Background(), question("乾卦是什么意思？"), fn)
		done <- err
	}()
	select {
	case <-llmDone:
	case <-time.After(5 * time.Second):
		t.Error("an answerer's events wait for another's write")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var deltas []string
	for _, e := range rec.of(mix.EventAnswerDelta) {
		deltas = append(deltas, e.Text)
	}
	if !slices.Equal(deltas, []string{"k1", "l1", "l2"}) {
		t.Errorf("answer deltas %q, want k1 l1 l2 in the order they were emitted", deltas)
	}
	if rec.text() != fused {
		t.Errorf("reply %q, want the fusion %q", rec.text(), fused)
	}
}
