package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/memory"
)

// TestLongTermMessageLanguage: the long-term memory message a new
// conversation gets is in the deployment's language when set, else in the
// first question's — not English by default in a Chinese deployment.
func TestLongTermMessageLanguage(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, language, question, want string
	}{
		{"chinese question", "", "我住在哪里？", "关于用户，你已知道"},
		{"english question", "", "Where do I live?", "What you know about the user"},
		{"chinese deployment", memory.LanguageZH, "Where do I live?", "关于用户，你已知道"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := openSQLite(t, ":memory:")
			m := newManager(t, store, func(c *memory.Config) { c.Language = tt.language }, memory.Options{})
			if _, err := m.SetUserMemory(ctx, "alice", "", []string{"Li Lei lives in Beijing."}); err != nil {
				t.Fatal(err)
			}
			createConv(t, store, "c", "alice")
			msgs, err := m.Recall(ctx, "c", tt.question, "", -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 || !strings.Contains(msgs[0].Content, tt.want) {
				t.Errorf("long-term message %q, want %q", joined(msgs), tt.want)
			}
		})
	}
}

// TestHeadingsFollowTheQuestion: memory headings are in the question's
// language, not switched by English answers.
func TestHeadingsFollowTheQuestion(t *testing.T) {
	ctx := context.Background()
	store := openSQLite(t, ":memory:")
	m := newManager(t, store, func(c *memory.Config) {
		c.MaxTokenLimit = 200
		c.Compression.TriggerTokens = 60
		c.Compression.GroupSize = 2
	}, memory.Options{})
	var pairs []string
	for _, q := range []string{"乾卦是什么意思？", "坤卦呢？", "屯卦讲什么？", "蒙卦呢？", "需卦呢？", "讼卦呢？"} {
		pairs = append(pairs, q, "This hexagram is about heaven, creative force and strength; it is read from the bottom line up to the top line.")
	}
	add(t, store, m, "c", pairs...)
	flush(t, m)
	msgs, err := m.Recall(ctx, "c", "师卦呢？", memory.Summary, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || !strings.HasPrefix(msgs[0].Content, "此前对话的摘要") {
		t.Errorf("summary heading %q, want the Chinese one", msgs[0].Content)
	}
}
