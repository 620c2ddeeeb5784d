package extractive_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
)

// FuzzRewrite runs the offline rewriter over a two-turn conversation and a
// follow-up made of the inputs, with and without a vocabulary naming a
// word of the history, and with the "always" policy: it must not panic,
// its standalone question and context must be valid UTF-8, and neither
// may be longer than all it read (history and question) and a little
// more (the words a rewrite adds: "Besides", "of", a possessive).
func FuzzRewrite(f *testing.F) {
	f.Add("Which one would you suggest?", "How about Acorn Guest House? It has free parking.", "Can I get the phone number?")
	f.Add("What events are there in Shanghai this spring?", "Auto Shanghai runs in April.", "Can you give me their registration links?")
	f.Add("Tell me about Sheryl Crow.", "She released her first album in 1993 and won three Grammys.", "What else happened in 1998?")
	f.Add("乾卦的卦辞是什么？", "乾：元亨利贞。", "那九二呢？")
	f.Add("坤卦讲的是什么？", "坤为地，厚德载物。", "它的象辞呢？")
	f.Add("What about Golden Wok?", "Golden Wok opens at noon.", "And Pizza Hut?")
	f.Add("", "", "why?")
	f.Add("\xff\xfe", "它\x80", "这\xc3个呢？")
	f.Fuzz(func(t *testing.T, q1, a1, q string) {
		history := []llm.Message{{Role: llm.RoleUser, Content: q1}, {Role: llm.RoleAssistant, Content: a1}}
		recent := []memory.Line{{Role: llm.RoleUser, Text: q1}, {Role: llm.RoleAssistant, Text: a1}}
		var vocab extractive.NameList
		if fs := strings.Fields(a1); len(fs) > 0 {
			vocab = append(vocab, fs[len(fs)/2])
		}
		read := len(q1) + len(a1) + len(q)
		for _, r := range []*extractive.Rewriter{extractive.NewRewriter(nil, nil), extractive.NewRewriter(vocab, nil)} {
			for _, always := range []bool{false, true} {
				c, err := r.Rewrite(context.Background(), memory.FollowUp{History: history, Recent: recent, Question: q, Always: always})
				if err != nil {
					t.Fatalf("Rewrite(%q after %q, %q): %v", q, q1, a1, err)
				}
				for _, s := range []string{c.Standalone, c.Context} {
					if !utf8.ValidString(s) {
						t.Errorf("Rewrite(%q after %q, %q) gave invalid UTF-8 %q", q, q1, a1, s)
					}
					if len(s) > 2*read+64 {
						t.Errorf("Rewrite(%q after %q, %q) gave %d bytes from %d read: %q", q, q1, a1, len(s), read, s)
					}
				}
			}
		}
		out := extractive.RewriteFollowUp(memory.FollowUp{History: history, Question: q}, vocab)
		if !utf8.ValidString(out) || len(out) > 2*read+64 {
			t.Errorf("RewriteFollowUp(%q after %q, %q) = %q", q, q1, a1, out)
		}
	})
}
