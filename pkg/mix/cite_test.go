package mix_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

// TestMixNumbersAsTheSourcesList: the answers' [n] markers reach the
// fusion (prompt and grounding) renumbered into the turn's sources list,
// the docs the client sees: an answer's [k] is the list's entry of its
// k-th source, and a marker naming none of its sources is dropped.
func TestMixNumbersAsTheSourcesList(t *testing.T) {
	model := fuser()
	kbSrcs := []rag.Source{{Title: "a", Snippet: "甲。", KB: "notes"}, {Title: "b", Snippet: "乙。", KB: "notes"}}
	webSrc := rag.Source{Title: "c", URL: "https://example.org/c", Snippet: "丙。"}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model), Answerers: map[string]rag.Answerer{
		rag.LLM:    answer(rag.LLM, "丁[1]。"),
		rag.KB:     answer(rag.KB, "甲[1]。乙[2]。", kbSrcs...),
		rag.Search: answer(rag.Search, "丙[1]。", webSrc),
	}})
	res, err := m.Mix(context.Background(), question("甲乙丙丁是什么？"), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{} // snippet → number in the sources list
	for i, d := range res.Docs {
		at[d.Snippet] = i + 1
	}
	want := map[string]string{
		rag.LLM:    "丁。",
		rag.KB:     "甲[" + itoa(at["甲。"]) + "]。乙[" + itoa(at["乙。"]) + "]。",
		rag.Search: "丙[" + itoa(at["丙。"]) + "]。",
	}
	g := model.groundings()[0]
	if len(g.Answers) != 3 {
		t.Fatalf("grounding answers %+v, want 3", g.Answers)
	}
	prompt := model.requests()[0].Messages[0].Content
	for _, a := range g.Answers {
		if a.Text != want[a.From] {
			t.Errorf("%s answer fused as %q, want %q (docs %+v)", a.From, a.Text, want[a.From], res.Docs)
		}
		if !strings.Contains(prompt, want[a.From]) {
			t.Errorf("fusion prompt lacks %q:\n%s", want[a.From], prompt)
		}
	}
}

// TestMixContextNumbersAsTheSourcesList: in context mode a passage shown
// once for two sources keeps the number of its first, and the passages
// after it keep theirs in the sources list.
func TestMixContextNumbersAsTheSourcesList(t *testing.T) {
	model := fuser()
	called := errors.New("the answerer itself must not be called in context mode")
	kb := &retrieverAnswerer{Answerer: failing(called), srcs: []rag.Source{{Title: "a", Snippet: "甲乙。", KB: "notes"}}}
	web := &retrieverAnswerer{Answerer: failing(called), srcs: []rag.Source{{Title: "a", Snippet: "甲乙。"}, {Title: "c", Snippet: "丙丁。"}}}
	m := newMixer(t, mix.DefaultConfig(), mix.Deps{Models: registry(model),
		Answerers: map[string]rag.Answerer{rag.KB: kb, rag.Search: web}})
	req := question("甲乙丙丁是什么？")
	req.Fusion = mix.FusionContext
	req.Answerers = []string{rag.KB, rag.Search}
	res, err := m.Mix(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := model.groundings()[0]
	if len(res.Docs) != 3 || len(g.Evidence) != 2 {
		t.Fatalf("docs %+v, evidence %+v: want 3 docs, 2 passages", res.Docs, g.Evidence)
	}
	for _, e := range g.Evidence {
		if d := res.Docs[e.ID-1]; strings.TrimSpace(d.Snippet) != e.Text {
			t.Errorf("passage [%d] %q, but the sources list's entry %d is %q", e.ID, e.Text, e.ID, d.Snippet)
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "?"
	}
	return string(rune('0' + n))
}
