package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm/llmtest"
)

// liveSample is what the page showed at one moment of a mixed reply: the
// length of each answerer's text and of the fused reply.
type liveSample struct {
	LLM    int `json:"llm"`
	KB     int `json:"kb"`
	Search int `json:"search"`
	Fused  int `json:"fused"`
}

// TestLiveAnswers asks a mixed question (the demo's knowledge base and
// local search engine, a slow test model) and samples the page every
// 40 ms: the three answers must be seen growing side by side before the
// fused reply starts.
func TestLiveAnswers(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	srv := startServerWith(t, t.TempDir(), "demo: true\n")
	// The three answerers' calls come first, each slow (about 3 s, a
	// piece every 80 ms); then the fusion call, quick.
	slow := strings.Repeat("乾，元亨利贞。初九，潜龙勿用。", 3)
	srv.LLM.Script(
		llmtest.Reply{Text: slow, ChunkDelay: 80 * time.Millisecond},
		llmtest.Reply{Text: slow, ChunkDelay: 80 * time.Millisecond},
		llmtest.Reply{Text: slow, ChunkDelay: 80 * time.Millisecond},
		llmtest.Reply{Text: "融合：乾卦的卦辞是元亨利贞（据知识库）。", ChunkDelay: 20 * time.Millisecond},
	)
	p := openPage(t, srv, 1280, 860, false)
	p.choose("#lang-select", "en")
	p.waitJS(`document.querySelector('#opt-kb-list input[value="zhouyi"]')?.checked === true`, "the demo knowledge base selected")
	p.choose("#opt-mode", "mix")
	p.choose("#opt-model", "scripted")
	p.waitJS(`document.querySelector('#opt-engine') && document.querySelector('#opt-engine').value !== ''`, "a search engine chosen")

	// Sample the last reply from now on.
	eval[bool](p, `(() => {
		window.__live = [];
		const len = (sel) => { const r = [...document.querySelectorAll('#messages .msg.assistant')].pop();
			const e = r && r.querySelector(sel); return e ? e.innerText.trim().length : 0; };
		window.__liveTimer = setInterval(() => window.__live.push({
			llm: len('.answerer[data-answerer="llm"] .answerer-body .md'),
			kb: len('.answerer[data-answerer="kb"] .answerer-body .md'),
			search: len('.answerer[data-answerer="search"] .answerer-body .md'),
			fused: len('.answer'),
		}), 40);
		return true; })()`)
	p.ask("乾卦的卦辞是什么？")
	reply := p.waitAnswers(1)
	samples := eval[[]liveSample](p, `(() => { clearInterval(window.__liveTimer); return window.__live; })()`)
	p.screenshot("live-answers")

	if !strings.Contains(reply, "融合") {
		t.Errorf("the fused reply %q is not the fusion call's", reply)
	}
	// Before the fused reply starts: every answer seen partly written
	// (shorter than it ends) and seen growing.
	final := samples[len(samples)-1]
	grew := map[string]map[int]bool{"llm": {}, "kb": {}, "search": {}}
	together := false
	for _, s := range samples {
		if s.Fused > 0 {
			break
		}
		for name, n := range map[string]int{"llm": s.LLM, "kb": s.KB, "search": s.Search} {
			if n > 0 {
				grew[name][n] = true
			}
		}
		if s.LLM > 0 && s.KB > 0 && s.Search > 0 && s.LLM < final.LLM && s.KB < final.KB && s.Search < final.Search {
			together = true
		}
	}
	for name, lengths := range grew {
		if len(lengths) < 3 {
			t.Errorf("%s: %d distinct lengths seen before the fused reply started, want it seen growing", name, len(lengths))
		}
	}
	if !together {
		t.Errorf("the three answers were never seen partly written at the same time before the fused reply (%d samples, final %+v)", len(samples), final)
	}
	if final.Fused == 0 || final.LLM == 0 || final.KB == 0 || final.Search == 0 {
		t.Errorf("at the end the page shows %+v", final)
	}
	if cols := eval[string](p, `getComputedStyle(document.querySelector('#messages .msg.assistant .answerers')).gridTemplateColumns`); len(strings.Fields(cols)) < 3 {
		t.Errorf("the answers are not side by side: grid columns %q", cols)
	}
}
