package extractive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/chattest"
	"github.com/mixchat/mixchat/internal/golden"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
)

// turnMessages are the messages of turns first to first+n-1 of chattest.Turns,
// numbered as a stored conversation's turns: "question (i)", "answer [i]".
func turnMessages(first, n int) []llm.Message {
	var out []llm.Message
	for i := first; i < first+n; i++ {
		j := 2 * (i % (len(chattest.Turns) / 2))
		out = append(out,
			llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("%s (%d)", chattest.Turns[j], i)},
			llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("%s [%d]", chattest.Turns[j+1], i)})
	}
	return out
}

// excerptHistory is the history a retrieving memory gives late in a long
// conversation: a system message of earlier lines under a heading (the
// lines of every step-th turn from first that say something of topic, a
// turn of chattest.Turns, about 2,000 tokens of them), then the last three
// turns.
func excerptHistory(heading string, topic, first, step, n int) []llm.Message {
	var b strings.Builder
	b.WriteString(heading)
	b.WriteString("\n[27 Nov 2026]")
	for k := range n {
		i := first + k*step*(len(chattest.Turns)/2) + topic
		j := 2 * (i % (len(chattest.Turns) / 2))
		fmt.Fprintf(&b, "\nHuman: %s (%d)", chattest.Turns[j], i)
		if k%3 == 1 {
			fmt.Fprintf(&b, "\nAI: %s [%d]", chattest.Turns[j+1], i)
		}
	}
	return append([]llm.Message{{Role: llm.RoleSystem, Content: b.String()}}, turnMessages(first+n*step*16, 3)...)
}

// summaryHistory is a summarising memory's: a system message of the
// earlier lines, then the last fifteen turns.
func summaryHistory(heading string, last int) []llm.Message {
	var b strings.Builder
	b.WriteString(heading)
	for j, s := range chattest.Turns {
		who := "Human"
		if j%2 == 1 {
			who = "AI"
		}
		fmt.Fprintf(&b, "\n%s: %s", who, s)
	}
	return append([]llm.Message{{Role: llm.RoleSystem, Content: b.String()}}, turnMessages(last-15, 15)...)
}

// fileEvidence is the passages a knowledge base retrieves from the file
// at path (in the Splitter's chunks), cited from 1.
func fileEvidence(tb testing.TB, path string) []llm.Evidence {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := kb.Load(filepath.Base(path), data)
	if err != nil {
		tb.Fatal(err)
	}
	title := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	var ev []llm.Evidence
	for i, p := range (kb.Splitter{Size: 250, Overlap: 50}).Split(docs) {
		path := title
		if s, _ := p.Metadata["section"].(string); s != "" {
			path += " > " + s
		}
		ev = append(ev, llm.Evidence{ID: i + 1, Path: path, Text: p.Text, From: "kb"})
	}
	return ev
}

type longCase struct {
	name string
	g    llm.Grounding
	max  int // the request's MaxTokens
}

// longHistoryCases are requests late in a long conversation: histories
// as the memory strategies give them (excerpts, a summary, a token
// buffer's many turns), questions that repeat an earlier one, ask about
// what the user said, ask what nobody said, and ask of evidence given
// with the history (a knowledge base's sections, a web page's passages).
func longHistoryCases(tb testing.TB) []longCase {
	tb.Helper()
	holiday := fileEvidence(tb, "testdata/holiday-policy.md")
	dining := fileEvidence(tb, "testdata/group-dining.md")
	book, err := os.ReadFile("../../demo/zhouyi/zhouyi-traditional.txt")
	if err != nil {
		tb.Fatal(err)
	}
	zhouyi := []llm.Evidence{{ID: 1, Title: "zhouyi", Path: "zhouyi", Text: string(book[:6000]), From: "kb"}}
	web := []llm.Evidence{
		{ID: 1, Title: "Tea", Text: "Tea was first drunk in China. It reached Europe in the 17th century. Green tea is not fermented; black tea is.", From: "search"},
		{ID: 2, Title: "青城山", Text: "青城山位于四川省都江堰市。青城山是道教名山之一。山上空气清新，适合徒步。", From: "search"},
	}
	histories := []struct {
		name string
		h    []llm.Message
	}{
		{"excerpts-en", excerptHistory("Earlier in this conversation:", 0, 17, 1, 90)},
		{"excerpts-zh", excerptHistory("本次对话中较早的相关内容：", 1, 721, 1, 90)},
		{"excerpts-mixed", excerptHistory("Earlier in this conversation:", 5, 3, 2, 60)},
		{"summary", summaryHistory("Summary of the earlier conversation:", 2000)},
		{"token-buffer", turnMessages(1916, 42)},
	}
	questions := []string{
		"我周末喜欢去青城山徒步。 (10001)",
		"How long should I boil an egg for a soft yolk? (10004)",
		"What is my name?",
		"我的猫叫什么名字？",
		"Where is my sister Anna moving?",
		"我每天早上几点起床？",
		"What is the capital of Peru?",
		"Is Berlin lovely in spring?",
	}
	var out []longCase
	for _, h := range histories {
		for _, q := range questions {
			out = append(out, longCase{name: h.name + " / " + q, g: llm.Grounding{Question: q, History: h.h}})
		}
	}
	evidence := []struct {
		name string
		ev   []llm.Evidence
		qs   []string
	}{
		{"holiday", holiday, []string{"工龄满5年的员工有几天年假？", "病假期间工资怎么发？", "我周末喜欢去青城山徒步。 (10001)"}},
		{"dining", dining, []string{"Are pets allowed in the dining room?", "When does the kitchen close on Sundays?", "What is my name?"}},
		{"zhouyi", zhouyi, []string{"潛龍勿用是什么意思？", "乾卦的九二爻辞是什么？"}},
		{"web", web, []string{"When did tea reach Europe?", "青城山在哪里？"}},
	}
	for _, e := range evidence {
		for i, q := range e.qs {
			h := histories[i%len(histories)]
			c := longCase{name: e.name + " / " + h.name + " / " + q, g: llm.Grounding{Question: q, Evidence: e.ev, History: h.h}}
			if i == 1 {
				c.max = 40
			}
			out = append(out, c)
		}
	}
	out = append(out, longCase{name: "weights / summary / tea",
		g: llm.Grounding{Question: "Can you recommend a book about tea?", History: histories[3].h,
			Weights: map[string]float64{"book": 2.1, "recommend": 3.4, "tea": 1.2}}})
	return out
}

// TestLongHistoryGolden: the model's replies late in a long conversation,
// with and without evidence, are those of the golden file, byte for byte
// (the reply, whether nothing was found, the estimated usage).
func TestLongHistoryGolden(t *testing.T) {
	m := extractive.New(extractive.Options{})
	var b strings.Builder
	for _, c := range longHistoryCases(t) {
		resp, err := m.Generate(context.Background(), llm.Request{MaxTokens: c.max}, c.g, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "## %s\nnothing_found=%v usage=%d+%d\n%s\n\n", c.name, resp.NothingFound,
			resp.Usage.PromptTokens, resp.Usage.CompletionTokens, resp.Text)
	}
	golden.Check(t, "testdata/long-history.golden", b.String())
}

// BenchmarkModelLongHistory: one reply late in a long conversation, from
// about 2,000 tokens of history (excerpts and recent turns, as a
// retrieving memory gives them; a token buffer's many turns) against one
// from the ten turns of an early one.
func BenchmarkModelLongHistory(b *testing.B) {
	m := extractive.New(extractive.Options{})
	for _, bc := range []struct {
		name string
		g    llm.Grounding
	}{
		{"excerpts-zh", llm.Grounding{Question: "我周末喜欢去青城山徒步。 (10001)", History: excerptHistory("本次对话中较早的相关内容：", 1, 721, 1, 90)}},
		{"excerpts-en", llm.Grounding{Question: "How long should I boil an egg for a soft yolk? (10004)", History: excerptHistory("Earlier in this conversation:", 4, 17, 1, 90)}},
		{"token-buffer", llm.Grounding{Question: "我周末喜欢去青城山徒步。 (10001)", History: turnMessages(1916, 42)}},
		{"early", llm.Grounding{Question: "我周末喜欢去青城山徒步。 (10001)", History: turnMessages(1, 10)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Generate(context.Background(), llm.Request{}, bc.g, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
