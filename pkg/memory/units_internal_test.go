package memory

import (
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

func TestQuestionDates(t *testing.T) {
	now := time.Date(2023, 10, 20, 15, 0, 0, 0, time.UTC)
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		q        string
		from, to time.Time
		ok       bool
	}{
		{"What did Maria do on 31 July, 2023?", day(2023, 7, 31), day(2023, 8, 1), true},
		{"What painting did Melanie show on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14), true},
		{"What did she do on the 3rd of June 2023?", day(2023, 6, 3), day(2023, 6, 4), true},
		{"What setback did Melanie face in October 2023?", day(2023, 10, 1), day(2023, 11, 1), true},
		{"When did Melanie go camping in June?", day(2023, 6, 1), day(2023, 7, 1), true},
		{"What happened in December?", day(2022, 12, 1), day(2023, 1, 1), true},
		{"What did he host in 2022?", day(2022, 1, 1), day(2023, 1, 1), true},
		{"我们2023年7月7日聊了什么？", day(2023, 7, 7), day(2023, 7, 8), true},
		{"2023年5月的计划是什么？", day(2023, 5, 1), day(2023, 6, 1), true},
		{"11月3日我说了什么？", day(2022, 11, 3), day(2022, 11, 4), true},
		{"昨天我们聊了什么？", day(2023, 10, 19), day(2023, 10, 20), true},
		{"What did I say yesterday?", day(2023, 10, 19), day(2023, 10, 20), true},
		{"上个月你推荐了哪本书？", day(2023, 9, 1), day(2023, 10, 1), true},
		{"Where was John between August 11 and August 15 2023?", day(2023, 8, 11), day(2023, 8, 16), true},
		{"What did he do between May 3 and 9, 2023?", day(2023, 5, 3), day(2023, 5, 10), true},
		{"What did they give him when they met on Aug 15th?", day(2023, 8, 15), day(2023, 8, 16), true},
		{"What happened on the 3rd of November?", day(2022, 11, 3), day(2022, 11, 4), true},
		{"Where was the picture shared on December 1,2022 taken?", day(2022, 12, 1), day(2022, 12, 2), true},
		{"In what country was Jolene during summer 2022?", day(2022, 6, 1), day(2022, 9, 1), true},
		{"What happened in the winter of 2022?", day(2022, 12, 1), day(2023, 3, 1), true},
		{"What did I say between June 9 and May 2 2023?", day(2023, 5, 2), day(2023, 5, 3), true}, // not a range: the full date counts
		{"See you 2023-02-30 maybe", time.Time{}, time.Time{}, false},
		{"May I ask what Qian means?", time.Time{}, time.Time{}, false},
		{"What is the hexagram Qian?", time.Time{}, time.Time{}, false},
	}
	for _, tt := range tests {
		span, ok := questionDates(tt.q, now, time.UTC)
		if ok != tt.ok || !span.From.Equal(tt.from) || !span.To.Equal(tt.to) {
			t.Errorf("questionDates(%q) = %v–%v %v, want %v–%v %v", tt.q, span.From, span.To, ok, tt.from, tt.to, tt.ok)
		}
	}
}

func TestParseCondensed(t *testing.T) {
	for _, tt := range []struct {
		in, facts, q string
		ok           bool
	}{
		{"FACTS:\n- a\n- b\nQUESTION: q?", "a\nb", "q?", true},
		{"**Facts:**\n- none\n**Standalone question:** q2?", "", "q2?", true},
		{"事实：\n- 坤卦象征地。\n问题：坤卦的象辞是什么？", "坤卦象征地。", "坤卦的象辞是什么？", true},
		{"FACTS: one fact\nQUESTION：全角冒号？", "one fact", "全角冒号？", true},
		// Not the format: nothing of it is used (it used to become the
		// context whole).
		{"no format at all", "", "", false},
		{"FAKE ANSWER: Below are the last exchanges of a conversation.\nFACTS:\n- a\nQUESTION: q?", "", "", false},
		{"FACTS:\n- a\nno question heading", "", "", false},
		{"FACTS:\n- a\nQUESTION: q?\nQUESTION: r?", "", "", false},
	} {
		facts, q, ok := parseCondensed(tt.in)
		if facts != tt.facts || q != tt.q || ok != tt.ok {
			t.Errorf("parseCondensed(%q) = %q, %q, %v; want %q, %q, %v", tt.in, facts, q, ok, tt.facts, tt.q, tt.ok)
		}
	}
}

func TestPlausibleRewrite(t *testing.T) {
	for _, tt := range []struct {
		q, s string
		want bool
	}{
		{"Does it have parking?", "Does La Margherita have parking?", true},
		{"它生出什么？", "太极生出什么？", true},
		{"tell me more", "tell me more about La Margherita", true},
		{"Does it have parking?", "", false},
		{"Does it have parking?", "Yes, it has a car park.", false},
		{"Does it have parking?", "Does La Margherita have parking?\nIt does.", false},
		{"它生出什么？", "What does Taiji produce?", false},
		{"Why?", "Why? " + strings.Repeat("Because of many long reasons ", 10) + "?", false},
	} {
		if got := plausibleRewrite(tt.q, tt.s); got != tt.want {
			t.Errorf("plausibleRewrite(%q, %q) = %v, want %v", tt.q, tt.s, got, tt.want)
		}
	}
}

func TestSplitRows(t *testing.T) {
	got := splitRows("- user | likes | tea\n(Li Lei | lives in | Hangzhou)\nNONE\nbad line\na | b | c | d\n | x | y", 3)
	want := [][]string{{"user", "likes", "tea"}, {"Li Lei", "lives in", "Hangzhou"}, {"a", "b", "c | d"}}
	if len(got) != len(want) {
		t.Fatalf("splitRows = %q, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i], "/") != strings.Join(want[i], "/") {
			t.Errorf("row %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	c := DefaultConfig()
	c.Strategy = "bogus"
	c.MaxTokenLimit = 10
	c.TimeZone = "Mars/Olympus"
	c.Retrieval.VectorWeight = 2
	c.Condense.MaxPairs = 6
	c.LongTerm.Prompt = "klingon"
	err := c.Validate()
	for _, field := range []string{"memory.strategy", "memory.max_token_limit", "memory.time_zone", "memory.retrieval.vector_weight",
		"memory.condense.max_pairs", "memory.long_term.prompt"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want it to name %s", err, field)
		}
	}
}

func TestFitTokens(t *testing.T) {
	s := "First sentence here. Second sentence is longer than the first one. Third."
	if got := fitTokens(s, 5, llm.Estimate); got != "First sentence here." {
		t.Errorf("fitTokens = %q", got)
	}
	if got := fitTokens("一二三四五六七八九十", 4, llm.Estimate); llm.Estimate(got) > 4 || got == "" {
		t.Errorf("fitTokens of one long sentence = %q", got)
	}
}

// TestHeadOf: a message the rewrite reads is cut after whole sentences,
// as written, within the budget.
func TestHeadOf(t *testing.T) {
	count := func(s string) int { return len([]rune(s)) }
	for _, tt := range []struct {
		s    string
		max  int
		want string
	}{
		{"短句。", 10, "短句。"},
		{"乾卦的卦辞是元亨利贞。元为万物之始，亨为通达。", 12, "乾卦的卦辞是元亨利贞。…"},
		{"It opens at noon. On Sundays at one.", 20, "It opens at noon.…"},
		{"一二三四五六七八九十一二三四五", 5, "一二三四…"},
	} {
		if got := headOf(tt.s, tt.max, count); got != tt.want {
			t.Errorf("headOf(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}

// TestLastPairs: at most MaxPairs whole exchanges (not the answer before
// the oldest question), each message within MessageTokens.
func TestLastPairs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Condense.MaxPairs, cfg.Condense.MessageTokens = 1, 10
	m := &Manager{cfg: cfg, tokens: estimator{}}
	h := []llm.Message{{Role: llm.RoleUser, Content: "q1"}, {Role: llm.RoleAssistant, Content: "a1"},
		{Role: llm.RoleUser, Content: "q2"}, {Role: llm.RoleAssistant, Content: strings.Repeat("This answer is long. ", 20)}}
	ls := m.lastPairs(h)
	if len(ls) != 2 || ls[0].text != "q2" || !strings.HasSuffix(ls[1].text, "…") || m.count(ls[1].text) > 12 {
		t.Errorf("lastPairs = %+v", ls)
	}
}
