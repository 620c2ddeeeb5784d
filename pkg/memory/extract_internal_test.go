package memory

import (
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
)

// TestOfflineExtractionSources: offline triples and entities come only
// from what the user (or a named person) states — never from the
// assistant's refusals, the offline model's banner or system text — and
// every clause of a statement counts ("…，住在北京").
func TestOfflineExtractionSources(t *testing.T) {
	lines := []line{
		{turn: 1, role: llm.RoleUser, text: "我叫李雷，住在北京。"},
		{turn: 1, role: llm.RoleAssistant, text: "（离线抽取式模型）在已知内容中没有找到与问题相关的信息。"},
		{turn: 2, role: llm.RoleSystem, text: "You are Zhouyi Expert, a helpful assistant."},
		{turn: 2, role: llm.RoleAssistant, text: "Kun stands for earth. I don't know the rest."},
		{turn: 3, role: llm.RoleUser, text: "（补充）我也喜欢太极拳。"},
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
		if f.name != UserLabel {
			t.Errorf("entity %q (%q) from a line that is not the user's", f.name, f.fact)
		}
	}
}

// TestModelTriplesGrounded: a model's triples that the conversation does
// not state — the prompt's example line echoed back — are dropped.
func TestModelTriplesGrounded(t *testing.T) {
	said := linesText([]line{{role: llm.RoleUser, text: "I live in Hangzhou and I like tea."}})
	for _, tt := range []struct {
		subj, obj string
		want      bool
	}{
		{"user", "Hangzhou", true},
		{"user", "tea", true},
		{"user", "the Zhouyi", false}, // the example of memory_triples
		{"Li Lei", "Hangzhou", false},
	} {
		if got := grounded(tt.subj, said) && grounded(tt.obj, said); got != tt.want {
			t.Errorf("grounded(%q, %q) = %v, want %v", tt.subj, tt.obj, got, tt.want)
		}
	}
}
