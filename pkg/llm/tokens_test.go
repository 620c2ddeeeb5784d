package llm_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/mixchat/mixchat/pkg/llm"
)

func TestTokenizerEncodingForModel(t *testing.T) {
	tests := []struct {
		model, want string
	}{
		{"gpt-4o", llm.EncodingO200k},
		{"gpt-4o-mini-2024-07-18", llm.EncodingO200k},
		{"chatgpt-4o-latest", llm.EncodingO200k},
		{"gpt-4.1-nano", llm.EncodingO200k},
		{"gpt-5", llm.EncodingO200k},
		{"o1", llm.EncodingO200k},
		{"o3-mini", llm.EncodingO200k},
		{"openai/gpt-4o", llm.EncodingO200k},
		{"GPT-4O", llm.EncodingO200k},
		{"gpt-4", llm.EncodingCl100k},
		{"gpt-4-turbo", llm.EncodingCl100k},
		{"gpt-3.5-turbo", llm.EncodingCl100k},
		{"text-embedding-3-small", llm.EncodingCl100k},
		{"text-embedding-ada-002", llm.EncodingCl100k},
		{"deepseek-chat", llm.EncodingEstimate},
		{"qwen-plus", llm.EncodingEstimate},
		{"glm-4", llm.EncodingEstimate},
		{"llama3.1:8b", llm.EncodingEstimate},
		{"offline-extractive", llm.EncodingEstimate},
		{"o1x", llm.EncodingEstimate},
		{"", llm.EncodingEstimate},
	}
	for _, tt := range tests {
		if got := llm.NewTokenizer(tt.model).Name(); got != tt.want {
			t.Errorf("NewTokenizer(%q).Name() = %q, want %q", tt.model, got, tt.want)
		}
	}
}

func TestCountTokens(t *testing.T) {
	const s = "我的名字是李雷。What is my name?"
	tests := []struct {
		model, text string
		want        int
	}{
		{"gpt-4", s, 13},
		{"gpt-4o", s, 11},
		{"deepseek-chat", s, 13}, // 7 CJK + 1 mark + 4 words + 1 mark
		{"gpt-4", "hello world", 2},
		{"gpt-4o", "", 0},
		{"qwen-plus", "", 0},
		{"qwen-plus", "internationalization 12345\n\nok", 7}, // 3 + 2 + 1 + 1
	}
	for _, tt := range tests {
		if got := llm.CountTokens(tt.model, tt.text); got != tt.want {
			t.Errorf("CountTokens(%q, %q) = %d, want %d", tt.model, tt.text, got, tt.want)
		}
	}
}

func TestCountMessages(t *testing.T) {
	tok := llm.NewTokenizer("gpt-4")
	// OpenAI reports 8 prompt tokens for one user message "hello":
	// 3 (message) + 1 (role) + 1 (content) + 3 (reply priming).
	if got := tok.CountMessages([]llm.Message{{Role: llm.RoleUser, Content: "hello"}}); got != 8 {
		t.Errorf("CountMessages(hello) = %d, want 8", got)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are a Zhouyi expert."},
		{Role: llm.RoleUser, Content: "乾卦是什么？"},
	}
	want := 3
	for _, m := range msgs {
		want += 3 + tok.Count(m.Role) + tok.Count(m.Content)
	}
	if got := tok.CountMessages(msgs); got != want {
		t.Errorf("CountMessages = %d, want %d", got, want)
	}
	if got := tok.CountMessages(nil); got != 0 {
		t.Errorf("CountMessages(nil) = %d, want 0", got)
	}
}

func TestCountTokensConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() {
			got[i] = llm.CountTokens("gpt-4o-mini", "我的名字是李雷。What is my name?")
		})
	}
	wg.Wait()
	for i, n := range got {
		if n != 11 {
			t.Errorf("goroutine %d counted %d, want 11", i, n)
		}
	}
}

// TestEstimateAgainstEncodings measures the fallback estimate against the
// real encodings on real text and keeps it within the documented error.
func TestEstimateAgainstEncodings(t *testing.T) {
	zhouyi := readShared(t, "zhouyi/zhouyi-traditional.txt")
	locomo := locomoText(t)
	tests := []struct {
		name             string
		text             string
		cl100kLo, cl100k float64 // allowed ratio estimate/cl100k
		o200kLo, o200k   float64 // allowed ratio estimate/o200k
	}{
		{"zhouyi (Chinese)", zhouyi, 0.65, 0.85, 0.9, 1.1},
		{"locomo (English dialogue)", locomo, 0.95, 1.08, 0.98, 1.12},
	}
	for _, tt := range tests {
		est := llm.Estimate(tt.text)
		cl := llm.CountTokens("gpt-4", tt.text)
		o2 := llm.CountTokens("gpt-4o", tt.text)
		rc, ro := float64(est)/float64(cl), float64(est)/float64(o2)
		t.Logf("%s: estimate %d, cl100k %d (×%.2f), o200k %d (×%.2f)", tt.name, est, cl, rc, o2, ro)
		if rc < tt.cl100kLo || rc > tt.cl100k {
			t.Errorf("%s: estimate/cl100k = %.2f, want in [%.2f, %.2f]", tt.name, rc, tt.cl100kLo, tt.cl100k)
		}
		if ro < tt.o200kLo || ro > tt.o200k {
			t.Errorf("%s: estimate/o200k = %.2f, want in [%.2f, %.2f]", tt.name, ro, tt.o200kLo, tt.o200k)
		}
	}
}

// locomoText returns the turns of LoCoMo's first conversation, one a line.
func locomoText(t testing.TB) string {
	t.Helper()
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal([]byte(readShared(t, "locomo/locomo10.json")), &convs); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 1; ; i++ {
		raw, ok := convs[0].Conversation["session_"+strconv.Itoa(i)]
		if !ok {
			break
		}
		var turns []struct{ Speaker, Text string }
		if err := json.Unmarshal(raw, &turns); err != nil {
			t.Fatal(err)
		}
		for _, tu := range turns {
			b.WriteString(tu.Speaker + ": " + tu.Text + "\n")
		}
	}
	return b.String()
}

func BenchmarkCountTokens(b *testing.B) {
	zhouyi := readShared(b, "zhouyi/zhouyi-traditional.txt")
	para := string([]rune(zhouyi)[:2000])
	for _, model := range []string{"gpt-4", "gpt-4o", "deepseek-chat"} {
		b.Run(model, func(b *testing.B) {
			b.SetBytes(int64(len(para)))
			for b.Loop() {
				llm.CountTokens(model, para)
			}
		})
	}
	b.Run("short/gpt-4o", func(b *testing.B) {
		for b.Loop() {
			llm.CountTokens("gpt-4o", "我的名字是李雷。What is my name?")
		}
	})
}

// TestNoMarkBelowFirstMark: Estimate asks unicode.IsMark only from
// firstMark on, which is exact only if no rune below it is a mark.
func TestNoMarkBelowFirstMark(t *testing.T) {
	for r := rune(0); r < 0x300; r++ {
		if unicode.IsMark(r) {
			t.Fatalf("%U is a mark", r)
		}
	}
	if !unicode.IsMark(0x300) {
		t.Fatal("U+0300 is not a mark")
	}
}
