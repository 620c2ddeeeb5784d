package mix_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

// TestMixStreamsAnswers checks that the intermediate answers stream as
// answer_delta events while they are written: every answerer sends its
// first piece and then waits until all three have sent theirs, which only
// works when the pieces go out as they come, before any answer is whole.
func TestMixStreamsAnswers(t *testing.T) {
	var mu sync.Mutex
	firsts := 0
	all := make(chan struct{})
	growing := func(from string, pieces ...string) rag.Answerer {
		return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
			if fn == nil {
				return rag.Answer{}, errors.New(from + ": asked without a stream callback")
			}
			if err := fn(pieces[0]); err != nil {
				return rag.Answer{}, err
			}
			mu.Lock()
			if firsts++; firsts == 3 {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(5 * time.Second):
				return rag.Answer{}, errors.New(from + ": the others' first pieces never came")
			}
			for _, p := range pieces[1:] {
				if err := fn(p); err != nil {
					return rag.Answer{}, err
				}
			}
			return rag.Answer{From: from, Text: strings.Join(pieces, "")}, nil
		})
	}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(fuser()), Answerers: map[string]rag.Answerer{
		rag.LLM: growing(rag.LLM, "乾为天，", "六爻皆阳。"), rag.KB: growing(rag.KB, "《周易》：", "乾，元亨利贞。"),
		rag.Search: growing(rag.Search, "网上说", "乾卦代表天。"),
	}})
	var rec recorder
	res, err := m.Mix(context.Background(), question("乾卦是什么意思？"), rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	firstAnswer, lastDelta, firstFused := -1, -1, -1
	for i, e := range rec.events {
		switch e.Type {
		case mix.EventAnswerDelta:
			got[e.Answerer] += e.Text
			lastDelta = i
		case mix.EventAnswer:
			if firstAnswer < 0 {
				firstAnswer = i
			}
			if got[e.Answerer] != e.Text {
				t.Errorf("%s: answer event %q, its deltas %q", e.Answerer, e.Text, got[e.Answerer])
			}
		case mix.EventDelta:
			if firstFused < 0 {
				firstFused = i
			}
		}
	}
	for _, o := range res.Answers {
		if !o.OK() || got[o.From] != o.Text {
			t.Errorf("%s: outcome %q (%v), streamed %q", o.From, o.Text, o.Err, got[o.From])
		}
	}
	if firstAnswer < 0 || firstFused < 0 || lastDelta > firstFused {
		t.Errorf("events out of order: first answer %d, last answer_delta %d, first fused delta %d", firstAnswer, lastDelta, firstFused)
	}
	if rec.text() != fused {
		t.Errorf("fused reply %q, want %q", rec.text(), fused)
	}
	tm := res.Timings
	if tm.FirstText <= 0 || tm.FirstText > tm.FirstToken {
		t.Errorf("first text after %s, first fused token after %s: the answers' text must come first", tm.FirstText, tm.FirstToken)
	}
	if _, ok := tm.Millis()["first_text_ms"]; !ok {
		t.Error("timings lack first_text_ms")
	}
}

// TestMixAnswererHistory checks which history the retrieving answerers see
// under mix.answerer_history, with and without a rewrite.
func TestMixAnswererHistory(t *testing.T) {
	history := []llm.Message{{Role: llm.RoleUser, Content: "乾卦"}, {Role: llm.RoleAssistant, Content: "乾为天。"}}
	rewrite := mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
		return "乾卦的卦辞是什么？", "", nil
	})
	broken := mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
		return "", "", errors.New("condenser down")
	})
	for _, tt := range []struct {
		name      string
		setting   string
		condenser mix.Condenser
		want      int // history messages the kb and search answerers see
	}{
		{"auto after a rewrite", "", rewrite, 0},
		{"auto, the rewrite failed", "", broken, 2},
		{"auto, no condenser", mix.HistoryAuto, nil, 2},
		{"none", mix.HistoryNone, nil, 0},
		{"all after a rewrite", mix.HistoryAll, rewrite, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]int{}
			spy := func(from string) rag.Answerer {
				return rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
					mu.Lock()
					seen[from] = len(q.History)
					mu.Unlock()
					return rag.Answer{From: from, Text: from + "：元亨利贞"}, nil
				})
			}
			cfg := mix.DefaultConfig()
			cfg.AnswererHistory = tt.setting
			m := newMixer(t, cfg, mix.Deps{Models: registry(fuser()), Condenser: tt.condenser,
				Answerers: map[string]rag.Answerer{rag.LLM: spy(rag.LLM), rag.KB: spy(rag.KB), rag.Search: spy(rag.Search)}})
			if _, err := m.Mix(context.Background(), mix.Request{Query: rag.Query{Text: "它的卦辞呢？", History: history}}, nil); err != nil {
				t.Fatal(err)
			}
			if seen[rag.KB] != tt.want || seen[rag.Search] != tt.want || seen[rag.LLM] != 2 {
				t.Errorf("history messages seen: %v; want kb and search %d, llm 2", seen, tt.want)
			}
		})
	}
	cfg := mix.DefaultConfig()
	cfg.AnswererHistory = "some"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "mix.answerer_history") {
		t.Errorf("answerer_history \"some\" accepted: %v", err)
	}
}

// TestMixContextSharedEvidence checks that a passage both the knowledge
// base and the search found is shown to the context prompt once, and the
// passages keep the numbers of the sources list.
func TestMixContextSharedEvidence(t *testing.T) {
	model := fuser()
	shared := "乾：元，亨，利，贞。\n初九：潜龙勿用。"
	kb := &retrieverAnswerer{Answerer: failing(errors.New("not called")), srcs: []rag.Source{{Title: "zhouyi.txt", Snippet: shared, KB: "zhouyi"}}}
	web := &retrieverAnswerer{Answerer: failing(errors.New("not called")), srcs: []rag.Source{
		{Title: "zhouyi.txt", URL: "file:///kb/zhouyi.txt", Snippet: "初九：潜龙勿用。"},
		{Title: "乾卦", URL: "https://example.org/qian", Snippet: "乾卦代表天。"},
	}}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: map[string]rag.Answerer{rag.KB: kb, rag.Search: web}})
	req := question("乾卦是什么意思？")
	req.Fusion = mix.FusionContext
	res, err := m.Mix(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt := model.requests()[0].Messages[0].Content
	if n := strings.Count(prompt, "潜龙勿用"); n != 1 {
		t.Errorf("the shared passage is in the prompt %d times, want once:\n%s", n, prompt)
	}
	// Numbered by its place in the sources list (docs), which keeps the
	// passage shown once: the client's [3].
	if !strings.Contains(prompt, "[3] 乾卦 <https://example.org/qian>") {
		t.Errorf("the web's own passage is missing or misnumbered:\n%s", prompt)
	}
	if len(res.Docs) != 3 {
		t.Errorf("docs %d, want all 3 sources listed", len(res.Docs))
	}
}

// TestMixPromptHistory checks that once the condenser read the history,
// the fusion prompt gets its context, not the dialog (unless
// answerer_history is "all"), and that local file links stay out of the
// context prompt while web addresses are shown decoded.
func TestMixPromptHistory(t *testing.T) {
	history := []llm.Message{{Role: llm.RoleUser, Content: "乾卦"}, {Role: llm.RoleAssistant, Content: "乾为天，六爻皆阳。"}}
	cond := mix.CondenseFunc(func(ctx context.Context, h []llm.Message, q string) (string, string, error) {
		return "乾卦的卦辞是什么？", "", nil
	})
	for _, setting := range []string{"", mix.HistoryAll} {
		model := fuser()
		cfg := mix.DefaultConfig()
		cfg.AnswererHistory = setting
		web := &retrieverAnswerer{Answerer: failing(errors.New("not called")), srcs: []rag.Source{
			{Title: "说卦传", URL: "file:///data/search/%E8%AF%B4%E5%8D%A6.md", Snippet: "乾为天。"},
			{Title: "乾卦", URL: "https://example.org/%E4%B9%BE", Snippet: "乾卦代表天。"},
		}}
		m := newMixer(t, cfg, mix.Deps{Models: registry(model), Condenser: cond, Answerers: map[string]rag.Answerer{rag.Search: web}})
		req := mix.Request{Query: rag.Query{Text: "它的卦辞呢？", History: history}, Fusion: mix.FusionContext}
		if _, err := m.Mix(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
		prompt := model.requests()[0].Messages[0].Content
		if got := strings.Contains(prompt, "六爻皆阳"); got != (setting == mix.HistoryAll) {
			t.Errorf("answerer_history %q: dialog in the prompt %v:\n%s", setting, got, prompt)
		}
		if strings.Contains(prompt, "file:") || !strings.Contains(prompt, "<https://example.org/乾>") {
			t.Errorf("addresses in the prompt: want no file link and the web one decoded:\n%s", prompt)
		}
	}
}
