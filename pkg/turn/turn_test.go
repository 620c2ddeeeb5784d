package turn_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
	"github.com/mixchat/mixchat/pkg/turn"
)

func openStore(t *testing.T) *sqlite.Conversations {
	t.Helper()
	return storetest.OpenAt(t, sqlite.OpenConversations, filepath.Join(t.TempDir(), "mixchat.db"))
}

// streamer answers with pieces, failing with fail after them when set; it
// records the query it was asked.
type streamer struct {
	pieces []string
	fail   error
	srcs   []rag.Source
	mu     sync.Mutex
	asked  []rag.Query
}

func (s *streamer) Answer(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
	s.mu.Lock()
	s.asked = append(s.asked, q)
	s.mu.Unlock()
	ans := rag.Answer{From: rag.KB, Sources: s.srcs, Response: llm.Response{Model: "m", Usage: llm.Usage{TotalTokens: 7}}}
	var b strings.Builder
	for _, p := range s.pieces {
		b.WriteString(p)
		if fn != nil {
			if err := fn(p); err != nil {
				return ans, err
			}
		}
	}
	if s.fail != nil {
		return ans, s.fail
	}
	ans.Text = b.String()
	return ans, nil
}

// events records a turn's events; failAt, when > 0, makes the failAt-th
// delta fail as a client gone away would.
type events struct {
	list   []turn.Event
	deltas int
	failAt int
}

func (e *events) emit(ev turn.Event) error {
	if ev.Type == turn.EventDelta {
		e.deltas++
		if e.deltas == e.failAt {
			return errors.New("client went away")
		}
	}
	e.list = append(e.list, ev)
	return nil
}

func (e *events) types() string {
	var out []string
	for _, ev := range e.list {
		out = append(out, ev.Type)
	}
	return strings.Join(out, ",")
}

func TestRunStoresAndStreams(t *testing.T) {
	store := openStore(t)
	r := turn.New(turn.Deps{Store: store})
	a := &streamer{pieces: []string{"元亨", "利贞"}, srcs: []rag.Source{{Title: "乾", Snippet: "元亨利贞"}}}
	var ev events
	req := turn.Request{ConversationID: "c1", AnswerID: "a1", Query: rag.Query{Text: "乾卦？"}, HistoryLen: -1, From: rag.KB, Answerer: a,
		Record: func(res turn.Result) map[string]any { return map[string]any{"answerer": res.Answer.From} }}
	res, err := r.Run(context.Background(), req, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.types(); got != "status,delta,delta,status,docs" {
		t.Errorf("events = %s", got)
	}
	if last := ev.list[len(ev.list)-1]; len(last.Docs) != 1 || last.Docs[0].From != rag.KB {
		t.Errorf("docs event = %+v", last)
	}
	if !res.Answered || res.Interrupted || res.Text != "元亨利贞" || res.MessageID() != "a1" || res.TurnID != 1 {
		t.Errorf("result = %+v", res)
	}
	turns, err := store.Turns(context.Background(), "c1", 0)
	if err != nil || len(turns) != 1 {
		t.Fatalf("turns = %v, %v", turns, err)
	}
	got := turns[0]
	if got.Question.Content != "乾卦？" || got.Answer.ID != "a1" || got.Answer.Content != "元亨利贞" ||
		got.Answer.Metadata.Extra["answerer"] != rag.KB || got.Answer.Metadata.Extra["usage"] == nil || got.Answer.Metadata.Interrupted {
		t.Errorf("stored turn = %+v", got)
	}
	if res.Usage.TotalTokens != 7 {
		t.Errorf("usage = %+v", res.Usage)
	}
}

// A reply whose client went away is stored as interrupted: what was sent
// as the content, all the model said as the original.
func TestRunCutShortIsStoredInterrupted(t *testing.T) {
	store := openStore(t)
	r := turn.New(turn.Deps{Store: store})
	a := &streamer{pieces: []string{"元亨", "利贞"}}
	ev := events{failAt: 2}
	res, err := r.Run(context.Background(), turn.Request{ConversationID: "c1", Query: rag.Query{Text: "乾卦？"}, From: rag.KB, Answerer: a}, ev.emit)
	if err == nil || !res.Cut || res.WriteErr == nil || !res.Answered || !res.Interrupted {
		t.Fatalf("result = %+v, err %v", res, err)
	}
	turns, _ := store.Turns(context.Background(), "c1", 0)
	if len(turns) != 1 {
		t.Fatalf("turns = %v", turns)
	}
	m := turns[0].Answer
	if m.Content != "元亨" || !m.Metadata.Interrupted || m.Metadata.Original != "元亨利贞" || m.Metadata.Extra["error"] != nil {
		t.Errorf("stored answer = %+v", m)
	}
}

func TestRunFailures(t *testing.T) {
	boom := errors.New("upstream down")
	for _, tc := range []struct {
		name     string
		a        *streamer
		stream   bool
		answered bool
	}{
		{"fails before saying anything", &streamer{fail: boom}, true, false},
		{"fails unstreamed", &streamer{pieces: []string{"元亨"}, fail: boom}, false, false},
		{"breaks off after a piece", &streamer{pieces: []string{"元亨"}, fail: boom}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			r := turn.New(turn.Deps{Store: store})
			var ev events
			emit := ev.emit
			if !tc.stream {
				emit = nil
			}
			res, err := r.Run(context.Background(), turn.Request{ConversationID: "c1", Query: rag.Query{Text: "乾卦？"}, From: rag.KB, Answerer: tc.a}, emit)
			if !errors.Is(err, boom) || res.Answered != tc.answered || res.Cut {
				t.Fatalf("result = %+v, err %v", res, err)
			}
			turns, _ := store.Turns(context.Background(), "c1", 0)
			if !tc.answered {
				if len(turns) != 0 {
					t.Errorf("a turn that said nothing was stored: %+v", turns)
				}
				return
			}
			if len(turns) != 1 || !turns[0].Answer.Metadata.Interrupted || turns[0].Answer.Metadata.Extra["error"] != boom.Error() {
				t.Errorf("stored = %+v", turns)
			}
		})
	}
}

// fakeMemory is a Memory whose recall a test scripts; it records the turns
// it is told of.
type fakeMemory struct {
	recall func(conversationID string, c memory.Choice) ([]llm.Message, error)
	mu     sync.Mutex
	told   []memory.Turn
}

func (m *fakeMemory) RecallChoice(ctx context.Context, conversationID, question string, c memory.Choice) ([]llm.Message, error) {
	return m.recall(conversationID, c)
}

func (m *fakeMemory) Remember(ctx context.Context, conversationID string, t memory.Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.told = append(m.told, t)
}

func TestRunRecallsAndRemembers(t *testing.T) {
	history := []llm.Message{{Role: llm.RoleUser, Content: "乾卦是什么？"}, {Role: llm.RoleAssistant, Content: "第一卦。"}}
	mem := &fakeMemory{recall: func(id string, c memory.Choice) ([]llm.Message, error) {
		if want := (memory.Choice{Strategy: memory.Window, WindowK: 3}); id != "c1" || c != want {
			t.Errorf("recall(%q, %+v), want %+v", id, c, want)
		}
		return history, nil
	}}
	r := turn.New(turn.Deps{Store: openStore(t), Memory: mem})
	a := &streamer{pieces: []string{"元亨利贞"}}
	req := turn.Request{ConversationID: "c1", Query: rag.Query{Text: "它的卦辞？"}, HistoryLen: -1, Memory: "window", WindowK: 3, From: rag.LLM, Answerer: a}
	if _, err := r.Run(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if len(a.asked) != 1 || len(a.asked[0].History) != 2 {
		t.Errorf("answerer asked %+v, want the recalled history", a.asked)
	}
	if len(mem.told) != 1 || mem.told[0].Answer.Content != "元亨利贞" {
		t.Errorf("memory told %+v", mem.told)
	}
	// Given history, or history_len 0, nothing is recalled.
	mem.recall = func(string, memory.Choice) ([]llm.Message, error) { return nil, errors.New("recalled") }
	for _, req := range []turn.Request{
		{ConversationID: "c1", Query: rag.Query{Text: "q", History: history}, HistoryLen: -1, From: rag.LLM, Answerer: a},
		{ConversationID: "c1", Query: rag.Query{Text: "q"}, HistoryLen: 0, From: rag.LLM, Answerer: a},
	} {
		if _, err := r.Run(context.Background(), req, nil); err != nil {
			t.Errorf("recalled although it should not: %v", err)
		}
	}
}

// Without a Memory the last turns of the store are the history.
func TestRunRecallsFromStore(t *testing.T) {
	r := turn.New(turn.Deps{Store: openStore(t), HistoryLen: 1})
	a := &streamer{pieces: []string{"答"}}
	for _, q := range []string{"一", "二", "三"} {
		if _, err := r.Run(context.Background(), turn.Request{ConversationID: "c1", Query: rag.Query{Text: q}, HistoryLen: -1, From: rag.LLM, Answerer: a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	last := a.asked[2].History
	if len(last) != 2 || last[0].Content != "二" {
		t.Errorf("third question saw %+v, want the one last turn", last)
	}
}

// A mixed turn: the turn recalls, the Mixer answers and fuses, and the
// Mixer's record is stored with the answer.
func TestRunMix(t *testing.T) {
	store := openStore(t)
	models := llm.NewRegistry("offline")
	models.Add("offline", extractive.New(extractive.Options{}))
	kbA := &streamer{pieces: []string{"乾卦卦辞：元亨利贞。"}, srcs: []rag.Source{{Title: "乾"}}}
	llmA := &streamer{pieces: []string{"乾为天。"}}
	m, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.KB: kbA, rag.LLM: llmA}})
	if err != nil {
		t.Fatal(err)
	}
	r := turn.New(turn.Deps{Store: store, Mixer: m})
	ctx := context.Background()
	var ev events
	req := turn.Request{ConversationID: "c1", Query: rag.Query{Text: "乾卦？"}, HistoryLen: -1, Mix: &mix.Request{}}
	res, err := r.Run(ctx, req, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Mix.Fused || res.Text == "" || !strings.Contains(ev.types(), "answer") || !strings.HasSuffix(ev.types(), "docs") {
		t.Errorf("result fused=%v text %q events %s", res.Mix.Fused, res.Text, ev.types())
	}
	if _, err := r.Run(ctx, turn.Request{ConversationID: "c1", Query: rag.Query{Text: "坤卦？"}, HistoryLen: -1, Mix: &mix.Request{}}, nil); err != nil {
		t.Fatal(err)
	}
	if h := llmA.asked[1].History; len(h) != 2 || h[0].Content != "乾卦？" {
		t.Errorf("second mixed turn's history = %+v", h)
	}
	turns, _ := store.Turns(ctx, "c1", 0)
	if len(turns) != 2 || turns[0].Answer.Metadata.Extra["chat_type"] != "mix_chat" || turns[0].Answer.Metadata.Extra["answers"] == nil {
		t.Errorf("stored = %+v", turns)
	}
}

func TestTitle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"乾卦是什么？", "乾卦是什么？"},
		{"  what   is\tQian?  \nmore", "what is Qian?"},
		{strings.Repeat("乾", 50), strings.Repeat("乾", 39) + "…"},
		{"How does the first hexagram of the Book of Changes relate to heaven and creativity?", "How does the first hexagram of the Book…"},
		{"", ""},
	} {
		if got := turn.Title(tc.in); got != tc.want {
			t.Errorf("Title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The request's memory settings: window_k sizes the recall from the store,
// and contradictory settings fail the turn before anything is recalled or
// stored.
func TestRunMemoryChoice(t *testing.T) {
	store := openStore(t)
	r := turn.New(turn.Deps{Store: store, HistoryLen: 5})
	a := &streamer{pieces: []string{"答"}}
	ctx := context.Background()
	for _, q := range []string{"一", "二", "三"} {
		if _, err := r.Run(ctx, turn.Request{ConversationID: "c1", Query: rag.Query{Text: q}, HistoryLen: -1, From: rag.LLM, Answerer: a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Run(ctx, turn.Request{ConversationID: "c1", Query: rag.Query{Text: "四"}, HistoryLen: -1, WindowK: 1, From: rag.LLM, Answerer: a}, nil); err != nil {
		t.Fatal(err)
	}
	if h := a.asked[3].History; len(h) != 2 || h[0].Content != "三" {
		t.Errorf("window_k 1 recalled %+v, want the last turn", h)
	}
	res, err := r.Run(ctx, turn.Request{ConversationID: "c1", Query: rag.Query{Text: "五"}, HistoryLen: 2, Memory: memory.Combined, From: rag.LLM, Answerer: a}, nil)
	if !errors.Is(err, memory.ErrContradiction) || res.Answered || len(a.asked) != 4 {
		t.Errorf("history_len with memory combined: %v, answered %v, %d answers", err, res.Answered, len(a.asked))
	}
	if turns, _ := store.Turns(ctx, "c1", 0); len(turns) != 4 {
		t.Errorf("%d turns stored, want 4", len(turns))
	}
}

// A single answerer that retrieves gets the follow-up rewritten once by the
// Mixer's condenser, against the recalled history; without Condense, or
// with a rewrite that fails, it retrieves with the question as asked.
func TestRunCondensesForSingleAnswerer(t *testing.T) {
	store := openStore(t)
	models := llm.NewRegistry("offline")
	models.Add("offline", extractive.New(extractive.Options{}))
	var calls []string
	fail := false
	condenser := mix.CondenseFunc(func(_ context.Context, history []llm.Message, q string) (string, string, error) {
		calls = append(calls, q)
		if fail {
			return "", "", errors.New("rewrite model down")
		}
		if len(history) != 2 || history[1].Content != "第一卦是乾卦。" {
			t.Errorf("condensed against %+v", history)
		}
		return "乾卦的卦辞是什么？", "", nil
	})
	kbA := &streamer{pieces: []string{"元亨利贞"}}
	m, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.KB: kbA}, Condenser: condenser})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := store.AppendTurn(ctx, "c1", memory.Message{Role: llm.RoleUser, Content: "周易第一卦是什么？"},
		memory.Message{Role: llm.RoleAssistant, Content: "第一卦是乾卦。"}); err != nil {
		t.Fatal(err)
	}
	r := turn.New(turn.Deps{Store: store, Mixer: m})
	req := turn.Request{ConversationID: "c1", Query: rag.Query{Text: "它的卦辞是什么？"}, HistoryLen: -1, Condense: true, From: rag.KB, Answerer: kbA}
	res, err := r.Run(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := kbA.asked[0]; got.Retrieval() != "乾卦的卦辞是什么？" || got.Text != "它的卦辞是什么？" || res.Standalone != "乾卦的卦辞是什么？" {
		t.Errorf("asked %+v, standalone %q", got, res.Standalone)
	}
	if len(calls) != 1 {
		t.Errorf("condenser called %d times, want once", len(calls))
	}
	req.Condense = false
	if _, err := r.Run(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	fail, req.Condense = true, true
	if _, err := r.Run(ctx, req, nil); err != nil {
		t.Fatalf("a failed rewrite failed the turn: %v", err)
	}
	for i, q := range kbA.asked[1:] {
		if q.Retrieval() != "它的卦辞是什么？" {
			t.Errorf("turn %d retrieved with %q, want the question as asked", i+2, q.Retrieval())
		}
	}
	if len(calls) != 2 {
		t.Errorf("condenser called %d times, want twice", len(calls))
	}
}

// A history recalled for the rewrite alone is the exchanges only
// (memory.Choice.Exchanges), and the answerer answers without it.
func TestRunRewriteOnly(t *testing.T) {
	models := llm.NewRegistry("offline")
	models.Add("offline", extractive.New(extractive.Options{}))
	history := []llm.Message{{Role: llm.RoleUser, Content: "周易第一卦是什么？"}, {Role: llm.RoleAssistant, Content: "第一卦是乾卦。"}}
	var condensed []llm.Message
	condenser := mix.CondenseFunc(func(_ context.Context, h []llm.Message, q string) (string, string, error) {
		condensed = h
		return "乾卦的卦辞是什么？", "", nil
	})
	kbA := &streamer{pieces: []string{"元亨利贞"}}
	m, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: models, Answerers: map[string]rag.Answerer{rag.KB: kbA}, Condenser: condenser})
	if err != nil {
		t.Fatal(err)
	}
	var choices []memory.Choice
	mem := &fakeMemory{recall: func(_ string, c memory.Choice) ([]llm.Message, error) {
		choices = append(choices, c)
		return history, nil
	}}
	r := turn.New(turn.Deps{Store: openStore(t), Memory: mem, Mixer: m})
	req := turn.Request{ConversationID: "c1", Query: rag.Query{Text: "它的卦辞是什么？"}, HistoryLen: -1,
		Condense: true, RewriteOnly: true, From: rag.KB, Answerer: kbA}
	res, err := r.Run(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(choices) != 1 || !choices[0].Exchanges {
		t.Errorf("recalled with %+v, want the exchanges only", choices)
	}
	if len(condensed) != 2 || res.Standalone != "乾卦的卦辞是什么？" {
		t.Errorf("condensed against %+v into %q", condensed, res.Standalone)
	}
	if got := kbA.asked[0]; len(got.History) != 0 || got.Retrieval() != "乾卦的卦辞是什么？" {
		t.Errorf("answerer asked %+v, want the standalone question and no history", got)
	}
	// Without RewriteOnly the recalled history is the whole memory and
	// the answerer's.
	choices, req.RewriteOnly = nil, false
	if _, err := r.Run(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if len(choices) != 1 || choices[0].Exchanges || len(kbA.asked[1].History) != 2 {
		t.Errorf("recalled with %+v, answerer asked %+v", choices, kbA.asked[1])
	}
}
