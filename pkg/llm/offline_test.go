package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

const (
	nothingZH = "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"
	nothingEN = "(offline extractive model) Nothing in the given context is relevant to the question."
	history   = "Human: 我的名字是李雷。\nAI: 你好，李雷！很高兴认识你。有什么可以帮你的吗？"
)

func complete(t *testing.T, m llm.Model, req llm.Request) llm.Response {
	t.Helper()
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestOfflineMemory is the design's memory test: the offline model answers
// from the conversation history it is given, and only from it.
func TestOfflineMemory(t *testing.T) {
	withHistory, err := prompts.Render("llm_chat", "with_history", map[string]any{"History": history, "Input": "我叫什么名字？"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  llm.Request
		want string // the whole reply
	}{
		{"context lines", llm.Request{Question: "我叫什么名字？", Context: []string{history}}, "你之前说过：“我的名字是李雷。”"},
		{"messages", llm.Request{Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "你是一个乐于助人的助手。"},
			{Role: llm.RoleUser, Content: "我的名字是李雷。"},
			{Role: llm.RoleAssistant, Content: "你好，李雷！"},
			{Role: llm.RoleUser, Content: "我叫什么名字？"},
		}}, "你之前说过：“我的名字是李雷。”"},
		{"whole prompt in one message", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: withHistory}}}, "你之前说过：“我的名字是李雷。”"},
		{"question given, context from the prompt", llm.Request{Question: "我叫什么名字？", Messages: []llm.Message{{Role: llm.RoleUser, Content: withHistory}}}, "你之前说过：“我的名字是李雷。”"},
		{"empty context", llm.Request{Question: "我叫什么名字？", Context: []string{}}, nothingZH},
		{"only function characters shared", llm.Request{Question: "我叫什么名字？", Context: []string{
			"AI: 你是一个什么样的人呢？我是一个助手。", "我喜欢吃苹果。"}}, nothingZH},
		{"no history", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "我叫什么名字？"}}}, nothingZH},
		{"English", llm.Request{Question: "What is my name?", Context: []string{"Human: My name is Li Lei.\nAI: Nice to meet you, Li Lei!"}}, `You said earlier: "My name is Li Lei."`},
		{"English, nothing", llm.Request{Question: "What is my name?", Context: nil}, nothingEN},
	}
	m := llm.NewOffline(llm.OfflineOptions{})
	for _, tt := range tests {
		resp := complete(t, m, tt.req)
		if resp.Text != tt.want {
			t.Errorf("%s: reply %q, want %q", tt.name, resp.Text, tt.want)
		}
		if !resp.Extractive || resp.Model != llm.OfflineName || resp.FinishReason != "stop" {
			t.Errorf("%s: response %+v, want extractive from %s", tt.name, resp, llm.OfflineName)
		}
		if u := resp.Usage; !u.Estimated || u.CompletionTokens != llm.Estimate(resp.Text) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("%s: usage %+v", tt.name, u)
		}
		if strings.Contains(resp.Text, "friendly conversation") || strings.Contains(resp.Text, "Human:") {
			t.Errorf("%s: prompt boilerplate in the reply %q", tt.name, resp.Text)
		}
	}
}

// zhouyiHead returns the first hexagrams of the Zhouyi (乾, 坤, 屯...).
func zhouyiHead(t testing.TB, lines int) string {
	all := strings.Split(readShared(t, "zhouyi/zhouyi-traditional.txt"), "\n")
	return strings.Join(all[:min(lines, len(all))], "\n")
}

func TestOfflineZhouyi(t *testing.T) {
	doc := zhouyiHead(t, 120)
	tests := []struct {
		q        string
		contains []string
		excludes []string
	}{
		{"乾卦是什么卦？", []string{"乾為天"}, []string{"坤為地"}},
		{"坤卦", []string{"坤為地"}, []string{"乾為天"}},
		{"潛龍勿用是什么意思？", []string{"潛龍勿用"}, nil},
		{"亢龍有悔", []string{"亢龍有悔"}, nil},
		{"今天天气怎么样？", []string{nothingZH}, nil},
	}
	m := llm.NewOffline(llm.OfflineOptions{})
	for _, tt := range tests {
		resp := complete(t, m, llm.Request{Question: tt.q, Context: []string{doc}})
		t.Logf("%s → %s", tt.q, resp.Text)
		for _, s := range tt.contains {
			if !strings.Contains(resp.Text, s) {
				t.Errorf("%s: reply %q lacks %q", tt.q, resp.Text, s)
			}
		}
		for _, s := range tt.excludes {
			if strings.Contains(resp.Text, s) {
				t.Errorf("%s: reply %q has %q", tt.q, resp.Text, s)
			}
		}
		if !strings.HasPrefix(tt.contains[0], "（") && !sentencesOf(resp.Text, doc) {
			t.Errorf("%s: reply %q is not made of the document's sentences", tt.q, resp.Text)
		}
	}
}

// sentencesOf reports whether every sentence of reply occurs in doc.
func sentencesOf(reply, doc string) bool {
	for _, s := range text.Sentences(reply) {
		if !strings.Contains(doc, s) {
			return false
		}
	}
	return true
}

func TestOfflineEnglish(t *testing.T) {
	// A LoCoMo conversation: the first session, one turn a line.
	var convs []struct {
		Conversation struct {
			Session1 []struct{ Speaker, Text string } `json:"session_1"`
		} `json:"conversation"`
	}
	if err := json.Unmarshal([]byte(readShared(t, "locomo/locomo10.json")), &convs); err != nil {
		t.Fatal(err)
	}
	var ctx []string
	for _, tu := range convs[0].Conversation.Session1 {
		ctx = append(ctx, tu.Speaker+": "+tu.Text)
	}
	m := llm.NewOffline(llm.OfflineOptions{})
	resp := complete(t, m, llm.Request{Question: "When did Caroline go to the LGBTQ support group?", Context: ctx})
	t.Logf("→ %s", resp.Text)
	if !strings.Contains(resp.Text, "I went to a LGBTQ support group yesterday") {
		t.Errorf("reply %q lacks the evidence turn", resp.Text)
	}

	doc := "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by Gustave Eiffel's company. " +
		"It was built from 1887 to 1889 as the entrance to the 1889 World's Fair. Paris is the capital of France. " +
		"The tower is 330 metres tall. The Eiffel Tower was built from 1887 to 1889."
	resp = complete(t, m, llm.Request{Question: "When was the Eiffel Tower built?", Context: []string{doc}})
	t.Logf("→ %s", resp.Text)
	if !strings.Contains(resp.Text, "1887 to 1889") {
		t.Errorf("reply %q lacks the date", resp.Text)
	}
	if strings.Count(resp.Text, "1887 to 1889") != 1 {
		t.Errorf("reply %q repeats a near duplicate", resp.Text)
	}
	resp = complete(t, m, llm.Request{Question: "What do penguins eat?", Context: []string{doc}})
	if resp.Text != nothingEN {
		t.Errorf("irrelevant question: %q", resp.Text)
	}
}

func TestOfflineSelection(t *testing.T) {
	doc := []string{
		"乾卦象征天，刚健不息。",
		"坤卦象征地，柔顺包容。",
		"乾卦的卦辞是元亨利贞。",
		"今天的天气很好。",
		"乾卦六爻皆阳，是纯阳之卦。",
		"乾卦的卦辞是：元亨利贞。",
	}
	m := llm.NewOffline(llm.OfflineOptions{MaxSentences: 2})
	resp := complete(t, m, llm.Request{Question: "乾卦的卦辞是什么？", Context: doc})
	if resp.Text != "乾卦的卦辞是元亨利贞。" {
		t.Errorf("reply %q, want the one sentence that answers, once", resp.Text)
	}
	resp = complete(t, m, llm.Request{Question: "乾卦", Context: doc})
	if n := len(text.Sentences(resp.Text)); n != 2 || strings.Contains(resp.Text, "坤") || strings.Contains(resp.Text, "天气") {
		t.Errorf("reply %q has %d sentences, want MaxSentences 2 about 乾卦", resp.Text, n)
	}
	// Kept in the context's order.
	all := complete(t, llm.NewOffline(llm.OfflineOptions{MaxSentences: 5}), llm.Request{Question: "乾卦", Context: doc})
	last := -1
	for _, s := range strings.SplitAfter(all.Text, "。") {
		if s == "" {
			continue
		}
		i := strings.Index(strings.Join(doc, ""), s)
		if i < last {
			t.Errorf("sentences out of the context's order: %q", all.Text)
		}
		last = i
	}
	// A token budget keeps the best sentence only.
	resp = complete(t, llm.NewOffline(llm.OfflineOptions{MaxSentences: 5}), llm.Request{Question: "乾卦", Context: doc, MaxTokens: 15})
	if n := strings.Count(resp.Text, "。"); n != 1 || !strings.Contains(resp.Text, "乾卦") {
		t.Errorf("MaxTokens 15: reply %q, want one sentence about 乾卦", resp.Text)
	}
	// A configured name is reported.
	if r := complete(t, llm.NewOffline(llm.OfflineOptions{Name: "local"}), llm.Request{Question: "x"}); r.Model != "local" {
		t.Errorf("Model = %q, want local", r.Model)
	}
}

func TestOfflineDeterministic(t *testing.T) {
	req := llm.Request{Question: "潛龍勿用是什么意思？", Context: []string{zhouyiHead(t, 400)}}
	m := llm.NewOffline(llm.OfflineOptions{MaxSentences: 5})
	want := complete(t, m, req).Text
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := llm.NewOffline(llm.OfflineOptions{MaxSentences: 5}).Complete(context.Background(), req)
			got[i] = resp.Text
		}()
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("run %d: %q, want %q", i, g, want)
		}
	}
}

func TestOfflineStream(t *testing.T) {
	m := llm.NewOffline(llm.OfflineOptions{MaxSentences: 5})
	req := llm.Request{Question: "乾卦", Context: []string{zhouyiHead(t, 120)}}
	want := complete(t, m, req)
	var pieces []string
	resp, err := m.Stream(context.Background(), req, func(d string) error {
		pieces = append(pieces, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp != want || strings.Join(pieces, "") != want.Text {
		t.Errorf("stream %q (%+v) differs from Complete %+v", pieces, resp, want)
	}
	if len(pieces) < 3 {
		t.Errorf("%d pieces, want the reply in small pieces", len(pieces))
	}
	for _, p := range pieces {
		if n := len([]rune(p)); n > 8 && strings.ContainsFunc(p, func(r rune) bool { return r > 0x2E80 }) {
			t.Errorf("piece %q has %d runes", p, n)
		}
	}

	// Cancelled between pieces.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err = m.Stream(ctx, req, func(string) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("after cancel: %v after %d pieces, want context.Canceled after 1", err, n)
	}
	// A failing callback stops the stream.
	errStop := errors.New("stop")
	n = 0
	if _, err = m.Stream(context.Background(), req, func(string) error { n++; return errStop }); err != errStop || n != 1 {
		t.Errorf("failing callback: %v after %d pieces", err, n)
	}
	// English words are not split.
	var en []string
	m.Stream(context.Background(), llm.Request{Question: "What is my name?", Context: []string{"Human: My name is Maximilian Oppenheimer."}}, func(d string) error {
		en = append(en, d)
		return nil
	})
	for _, p := range en {
		if strings.Contains(p, "Maximil") && !strings.Contains(p, "Maximilian") {
			t.Errorf("word split across pieces: %q", en)
		}
	}
}

func BenchmarkOffline(b *testing.B) {
	doc := readShared(b, "zhouyi/zhouyi-traditional.txt") // the whole book, ~32k characters
	m := llm.NewOffline(llm.OfflineOptions{})
	for _, bc := range []struct {
		name string
		req  llm.Request
	}{
		{"whole-zhouyi", llm.Request{Question: "潛龍勿用是什么意思？", Context: []string{doc}}},
		{"memory", llm.Request{Question: "我叫什么名字？", Context: []string{history}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.Complete(context.Background(), bc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
