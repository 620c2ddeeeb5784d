package extractive_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/docstruct"
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
	f.Add("劳动法第三条是什么？", "第三条 劳动者享有平等就业的权利。", "下一条呢？")
	f.Add("What does Article I, Section 8 say?", "The Congress shall have Power", "What about Section 9?")
	f.Add("I need a guesthouse.", "I have Allenbell and Acorn Guest House.", "Does either of these have parking?")
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
		// A vocabulary that knows documents too: the word as a title and
		// a thing, the demo's profile, kinds of parts.
		docs := zhouyi(t)
		docs.Names = vocab
		if len(vocab) > 0 {
			docs.Known.Titles = []docstruct.Title{{Title: vocab[0], Aliases: []string{strings.ToLower(vocab[0])}}}
			docs.Things = extractive.NewNameIndex([]extractive.Thing{{Name: vocab[0], Kind: "place"}})
		}
		docs.Known.Kinds = []string{"条", "章", "section", "article"}
		for _, r := range []*extractive.Rewriter{extractive.NewRewriter(nil, nil), extractive.NewRewriter(vocab, nil), extractive.NewRewriter(docs, nil)} {
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
		for _, v := range []extractive.Vocabulary{vocab, docs} {
			out := extractive.RewriteFollowUp(memory.FollowUp{History: history, Question: q}, v)
			if !utf8.ValidString(out) || len(out) > 2*read+64 {
				t.Errorf("RewriteFollowUp(%q after %q, %q) = %q", q, q1, a1, out)
			}
		}
	})
}
