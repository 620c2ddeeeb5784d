package extractive

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// TestOfflineExtractionSources: offline triples and entities come only
// from what the user (or a named person) states — never from the
// assistant's refusals, the offline model's banner or system text — and
// every clause of a statement counts ("…，住在北京").
func TestOfflineExtractionSources(t *testing.T) {
	lines := []memory.Line{
		{Turn: 1, Role: llm.RoleUser, Text: "我叫李雷，住在北京。"},
		{Turn: 1, Role: llm.RoleAssistant, Text: "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"},
		{Turn: 2, Role: llm.RoleSystem, Text: "You are Zhouyi Expert, a helpful assistant."},
		{Turn: 2, Role: llm.RoleAssistant, Text: "Kun stands for earth. I don't know the rest."},
		{Turn: 3, Role: llm.RoleUser, Text: "（补充）我也喜欢太极拳。"},
	}
	var got []string
	for _, tr := range lexicalTriples(lines) {
		got = append(got, tr.Subject+"|"+tr.Relation+"|"+tr.Object)
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{"user|叫|李雷", "user|住在|北京", "user|喜欢|太极拳"} {
		if !strings.Contains(joined, want) {
			t.Errorf("triples %q lack %q", got, want)
		}
	}
	for _, bad := range []string{"离线", "没有找到", "Zhouyi Expert", "Kun", "补充"} {
		if strings.Contains(joined, bad) {
			t.Errorf("triples %q hold %q", got, bad)
		}
	}
	for _, f := range lexicalEntities(lines, nil) {
		if f.Name != memory.UserLabel {
			t.Errorf("entity %q (%q) from a line that is not the user's", f.Name, f.Fact)
		}
	}
}

func TestDependsOnHistory(t *testing.T) {
	for q, want := range map[string]bool{
		"Can you give me their registration links?": true,
		"And the hexagram Kun?":                     true,
		"What about next year?":                     true,
		"Why?":                                      true,
		"What is my name?":                          true,
		"What does the hexagram Qian stand for?":    false,
		"How do people cast the oracle with coins?": false,
		"它的象辞是什么？":                                  true,
		"那坤卦呢？":                                     true,
		"为什么？":                                      true,
		"我叫什么名字？":                                   true,
		"乾卦的卦辞是什么意思？":                               false,
		"周易一共有多少卦，每卦有几爻？":                           false,
		"": false,
	} {
		if got := dependsOnHistory(q); got != want {
			t.Errorf("dependsOnHistory(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestLexicalTriples(t *testing.T) {
	user := memory.Line{Turn: 1, Role: llm.RoleUser, Text: ""}
	caroline := memory.Line{Turn: 2, Role: llm.RoleUser, Speaker: "Caroline"}
	for _, tt := range []struct {
		l    memory.Line
		text string
		want string
	}{
		{user, "我的名字是李雷。", "user|名字是|李雷"},
		{user, "我住在杭州，离西湖很近。", "user|住在|杭州"},
		{user, "My name is Li Lei.", "user|name is|Li Lei"},
		{caroline, "I went to a LGBTQ support group yesterday and it was so powerful.", "Caroline|went to|a LGBTQ support group yesterday and it was so powerful"},
		{user, "I'm learning the Zhouyi.", "user|am learning|the Zhouyi"},
		{user, "Wang Fang teaches me every Sunday.", "Wang Fang|teaches|me every Sunday"},
		{user, "Enjoy your study.", ""},
		{user, "What do you think?", ""},
		{memory.Line{Role: llm.RoleAssistant}, "I am an AI.", ""},
	} {
		tt.l.Text = tt.text
		ts := lexicalTriples([]memory.Line{tt.l})
		got := ""
		if len(ts) > 0 {
			got = ts[0].Subject + "|" + ts[0].Relation + "|" + ts[0].Object
		}
		if got != tt.want {
			t.Errorf("lexicalTriples(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestLexicalEntities(t *testing.T) {
	facts := lexicalEntities([]memory.Line{
		{Turn: 1, Role: llm.RoleUser, Text: "My teacher Wang Fang lives in Xi'an. Hey!"},
		{Turn: 1, Role: llm.RoleAssistant, Text: "Thanks for telling me about Wang Fang and the book 《周易本义》 she likes."},
		{Turn: 2, Role: llm.RoleUser, Text: "Does she teach online?"},
	}, nil)
	got := map[string][]string{}
	for _, f := range facts {
		got[f.Name] = append(got[f.Name], f.Fact)
	}
	// The assistant's line states nothing offline extraction keeps: only
	// the user's statements count.
	if len(got["user"]) != 1 || len(got["Wang Fang"]) != 1 || len(got["Xi'an"]) != 1 || len(got["周易本义"]) != 0 {
		t.Errorf("lexicalEntities = %v", got)
	}
	if _, ok := got["Thanks"]; ok {
		t.Error("a sentence-initial interjection became an entity")
	}
}

func TestExtractiveSummary(t *testing.T) {
	lines := []memory.Line{
		{Role: llm.RoleUser, Text: "Hi!"},
		{Role: llm.RoleAssistant, Text: "Hello! How can I help you today?"},
		{Role: llm.RoleUser, Text: "我的名字是李雷。我在杭州学习周易，已经学了三个月。"},
		{Role: llm.RoleAssistant, Text: "很好。周易共有六十四卦。"},
	}
	s := extractiveSummary("Human: I like tea very much, especially green tea.", lines, 40, llm.Estimate)
	if !strings.Contains(s, "我的名字是李雷。") {
		t.Errorf("summary lost the self-introduction: %q", s)
	}
	if strings.Contains(s, "Hi!") {
		t.Errorf("summary kept a greeting: %q", s)
	}
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n += llm.Estimate(l) + 1
	}
	if n > 40 {
		t.Errorf("summary of %d tokens, over 40: %q", n, s)
	}
	if extractiveSummary("", nil, 40, llm.Estimate) != "" {
		t.Error("summary of nothing is not empty")
	}
}
