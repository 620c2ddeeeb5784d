package extractive_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/text"
)

// TestMemory is the design's memory test: the model answers from the
// conversation it is given, and only from it.
func TestMemory(t *testing.T) {
	history := dialog("我的名字是李雷。", "你好，李雷！很高兴认识你。有什么可以帮你的吗？")
	tests := []struct {
		name string
		g    llm.Grounding
		want string // the whole reply
	}{
		{"history", llm.Grounding{Question: "我叫什么名字？", History: history}, "你之前说过：“我的名字是李雷。”"},
		{"system message", llm.Grounding{Question: "我叫什么名字？", History: append([]llm.Message{{Role: llm.RoleSystem, Content: "你是一个乐于助人的助手。"}}, history...)},
			"你之前说过：“我的名字是李雷。”"},
		{"no history", llm.Grounding{Question: "我叫什么名字？"}, nothingZH},
		{"only function characters shared", llm.Grounding{Question: "我叫什么名字？", History: []llm.Message{
			{Role: llm.RoleAssistant, Content: "你是一个什么样的人呢？我是一个助手。"}, {Role: llm.RoleSystem, Content: "我喜欢吃苹果。"}}}, nothingZH},
		{"English", llm.Grounding{Question: "What is my name?", History: dialog("My name is Li Lei.", "Nice to meet you, Li Lei!")}, `You said earlier: "My name is Li Lei."`},
		{"English, nothing", llm.Grounding{Question: "What is my name?"}, nothingEN},
	}
	m := extractive.New(extractive.Options{})
	for _, tt := range tests {
		resp := ask(t, m, tt.g)
		if resp.Text != tt.want {
			t.Errorf("%s: reply %q, want %q", tt.name, resp.Text, tt.want)
		}
		if !resp.Extractive || resp.Model != extractive.Name || resp.FinishReason != "stop" {
			t.Errorf("%s: response %+v, want extractive from %s", tt.name, resp, extractive.Name)
		}
		if nothing := tt.want == nothingZH || tt.want == nothingEN; resp.NothingFound != nothing {
			t.Errorf("%s: NothingFound %v, want %v", tt.name, resp.NothingFound, nothing)
		}
		if u := resp.Usage; !u.Estimated || u.CompletionTokens != llm.Estimate(resp.Text) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("%s: usage %+v", tt.name, u)
		}
	}
}

// TestMessagesAreAConversation: as an llm.Model, the model reads the
// messages as a conversation, and never a prompt's text: a rendered
// transcript in the question is the question, not a transcript.
func TestMessagesAreAConversation(t *testing.T) {
	m := extractive.New(extractive.Options{})
	resp, err := m.Complete(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "你是一个乐于助人的助手。"},
		{Role: llm.RoleUser, Content: "我的名字是李雷。"},
		{Role: llm.RoleAssistant, Content: "你好，李雷！"},
		{Role: llm.RoleUser, Content: "我叫什么名字？"},
	}})
	if err != nil || resp.Text != "你之前说过：“我的名字是李雷。”" {
		t.Errorf("messages: %q, %v", resp.Text, err)
	}
	resp, err = m.Complete(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "Human: 我的名字是李雷。\nAI: 你好，李雷！\nHuman: 我叫什么名字？"}}})
	if err != nil || !resp.NothingFound {
		t.Errorf("a transcript in one message: %q, %v; want nothing found", resp.Text, err)
	}
}

// zhouyiHead returns the first hexagrams of the Zhouyi (乾, 坤, 屯...).
func zhouyiHead(t testing.TB, lines int) string {
	all := strings.Split(readShared(t, "zhouyi/zhouyi-traditional.txt"), "\n")
	return strings.Join(all[:min(lines, len(all))], "\n")
}

func TestZhouyi(t *testing.T) {
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
	m := extractive.New(extractive.Options{})
	for _, tt := range tests {
		resp := ask(t, m, llm.Grounding{Question: tt.q, Evidence: []llm.Evidence{document(doc)}})
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

func TestEnglish(t *testing.T) {
	// A LoCoMo conversation: the first session, one turn a passage.
	var convs []struct {
		Conversation struct {
			Session1 []struct{ Speaker, Text string } `json:"session_1"`
		} `json:"conversation"`
	}
	if err := json.Unmarshal([]byte(readShared(t, "locomo/locomo10.json")), &convs); err != nil {
		t.Fatal(err)
	}
	var turns []string
	for _, tu := range convs[0].Conversation.Session1 {
		turns = append(turns, tu.Speaker+": "+tu.Text)
	}
	m := extractive.New(extractive.Options{})
	resp := ask(t, m, llm.Grounding{Question: "When did Caroline go to the LGBTQ support group?", Evidence: passages(turns...)})
	t.Logf("→ %s", resp.Text)
	if !strings.Contains(resp.Text, "I went to a LGBTQ support group yesterday") {
		t.Errorf("reply %q lacks the evidence turn", resp.Text)
	}

	doc := "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by Gustave Eiffel's company. " +
		"It was built from 1887 to 1889 as the entrance to the 1889 World's Fair. Paris is the capital of France. " +
		"The tower is 330 metres tall. The Eiffel Tower was built from 1887 to 1889."
	resp = ask(t, m, llm.Grounding{Question: "When was the Eiffel Tower built?", Evidence: passages(doc)})
	t.Logf("→ %s", resp.Text)
	if !strings.Contains(resp.Text, "1887 to 1889") {
		t.Errorf("reply %q lacks the date", resp.Text)
	}
	if strings.Count(resp.Text, "1887 to 1889") != 1 {
		t.Errorf("reply %q repeats a near duplicate", resp.Text)
	}
	resp = ask(t, m, llm.Grounding{Question: "What do penguins eat?", Evidence: passages(doc)})
	if resp.Text != nothingEN {
		t.Errorf("irrelevant question: %q", resp.Text)
	}
}

func TestSelection(t *testing.T) {
	doc := passages(
		"乾卦象征天，刚健不息。",
		"坤卦象征地，柔顺包容。",
		"乾卦的卦辞是元亨利贞。",
		"今天的天气很好。",
		"乾卦六爻皆阳，是纯阳之卦。",
		"乾卦的卦辞是：元亨利贞。",
	)
	m := extractive.New(extractive.Options{MaxSentences: 2})
	resp := ask(t, m, llm.Grounding{Question: "乾卦的卦辞是什么？", Evidence: doc})
	if resp.Text != "乾卦的卦辞是元亨利贞。" {
		t.Errorf("reply %q, want the one sentence that answers, once", resp.Text)
	}
	resp = ask(t, m, llm.Grounding{Question: "乾卦", Evidence: doc})
	if n := len(text.Sentences(resp.Text)); n != 2 || strings.Contains(resp.Text, "坤") || strings.Contains(resp.Text, "天气") {
		t.Errorf("reply %q has %d sentences, want MaxSentences 2 about 乾卦", resp.Text, n)
	}
	// Kept in the evidence's order.
	all := ask(t, extractive.New(extractive.Options{MaxSentences: 5}), llm.Grounding{Question: "乾卦", Evidence: doc})
	var texts []string
	for _, e := range doc {
		texts = append(texts, e.Text)
	}
	last := -1
	for _, s := range strings.SplitAfter(all.Text, "。") {
		if s == "" {
			continue
		}
		i := strings.Index(strings.Join(texts, ""), s)
		if i < last {
			t.Errorf("sentences out of the evidence's order: %q", all.Text)
		}
		last = i
	}
	// A token budget keeps the best sentence only.
	resp, err := extractive.New(extractive.Options{MaxSentences: 5}).Generate(context.Background(), llm.Request{MaxTokens: 15},
		llm.Grounding{Question: "乾卦", Evidence: doc}, nil)
	if n := strings.Count(resp.Text, "。"); err != nil || n != 1 || !strings.Contains(resp.Text, "乾卦") {
		t.Errorf("MaxTokens 15: reply %q (%v), want one sentence about 乾卦", resp.Text, err)
	}
	// A configured name is reported.
	if r := ask(t, extractive.New(extractive.Options{Name: "local"}), llm.Grounding{Question: "x"}); r.Model != "local" {
		t.Errorf("Model = %q, want local", r.Model)
	}
}

func TestDeterministic(t *testing.T) {
	g := llm.Grounding{Question: "潛龍勿用是什么意思？", Evidence: []llm.Evidence{document(zhouyiHead(t, 400))}}
	want := ask(t, extractive.New(extractive.Options{MaxSentences: 5}), g).Text
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := extractive.New(extractive.Options{MaxSentences: 5}).Generate(context.Background(), llm.Request{}, g, nil)
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

func TestStream(t *testing.T) {
	m := extractive.New(extractive.Options{MaxSentences: 5})
	g := llm.Grounding{Question: "乾卦", Evidence: []llm.Evidence{document(zhouyiHead(t, 120))}}
	want := ask(t, m, g)
	var pieces []string
	resp, err := m.Generate(context.Background(), llm.Request{}, g, func(d string) error {
		pieces = append(pieces, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp != want || strings.Join(pieces, "") != want.Text {
		t.Errorf("stream %q (%+v) differs from the whole reply %+v", pieces, resp, want)
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
	_, err = m.Generate(ctx, llm.Request{}, g, func(string) error { n++; cancel(); return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("after cancel: %v after %d pieces, want context.Canceled after 1", err, n)
	}
	// A failing callback stops the stream.
	errStop := errors.New("stop")
	n = 0
	if _, err = m.Generate(context.Background(), llm.Request{}, g, func(string) error { n++; return errStop }); err != errStop || n != 1 {
		t.Errorf("failing callback: %v after %d pieces", err, n)
	}
	// English words are not split.
	var en []string
	m.Stream(context.Background(), llm.Request{Messages: dialog("My name is Maximilian Oppenheimer.", "Hello!", "What is my name?")}, func(d string) error {
		en = append(en, d)
		return nil
	})
	if len(en) == 0 {
		t.Error("nothing streamed")
	}
	for _, p := range en {
		if strings.Contains(p, "Maximil") && !strings.Contains(p, "Maximilian") {
			t.Errorf("word split across pieces: %q", en)
		}
	}
}

func BenchmarkModel(b *testing.B) {
	doc := readShared(b, "zhouyi/zhouyi-traditional.txt") // the whole book, ~32k characters
	m := extractive.New(extractive.Options{})
	for _, bc := range []struct {
		name string
		g    llm.Grounding
	}{
		{"whole-zhouyi", llm.Grounding{Question: "潛龍勿用是什么意思？", Evidence: []llm.Evidence{document(doc)}}},
		{"memory", llm.Grounding{Question: "我叫什么名字？", History: dialog("我的名字是李雷。", "你好，李雷！很高兴认识你。有什么可以帮你的吗？")}},
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

// TestRelatedWords: a sentence that says what the question asks in other
// words (text.Related: "silent" for "quiet") answers it, before those that
// only repeat the question's other words.
func TestRelatedWords(t *testing.T) {
	m := extractive.New(extractive.Options{})
	doc := "The room had two beds. The room was silent all night. Breakfast was served in the garden room."
	resp := ask(t, m, llm.Grounding{Question: "Is the room quiet?", Evidence: passages(doc)})
	if !strings.Contains(resp.Text, "silent all night") || strings.Contains(resp.Text, "two beds") {
		t.Errorf("reply %q: want the sentence that says silent alone", resp.Text)
	}
}
