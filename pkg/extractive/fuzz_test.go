package extractive_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/llm"
)

// FuzzExtractiveReply feeds the model arbitrary groundings: a question,
// a knowledge base's chunk under a section path, the same text as a web
// page's passage, a conversation (one message a line), and the text's
// paragraphs as answers to fuse. It must not panic, must reply in valid
// UTF-8, and its reply must stay within a bound linear in its input: it
// quotes the material and adds only short fixed phrases.
//
//	go test ./pkg/extractive -run '^$' -fuzz FuzzExtractiveReply -fuzztime 30s
func FuzzExtractiveReply(f *testing.F) {
	f.Add("乾卦的卦辞是什么？", "zhouyi > 第一卦 乾", "第一卦 乾\n乾：元亨利贞。\n《彖》曰：大哉乾元！\n初九：潜龙勿用。", "我叫李雷。\n你好，李雷。", 2)
	f.Add("「潜龙勿用」出自哪一卦？", "易经 > 第一卦乾 乾为天", "初九：潜龙勿用。\n\n九二：见龙在田。", "", 0)
	f.Add("What is my name?", "", "", "My name is Li Lei.\nNice to meet you.", 1)
	f.Add("坤卦的六二是什么？", "zhouyi > 第二卦 坤", "坤，元亨。\n六二：直，方，大。\n\n（据知识库）坤为地[1]。", "", 3)
	f.Add("", "", "\xff\xfe[1] a。b。\n\n", "\x80", 3)
	f.Fuzz(func(t *testing.T, question, path, text, history string, fuse int) {
		fuse = ((fuse % 4) + 4) % 4
		g := llm.Grounding{Question: question, Evidence: []llm.Evidence{
			{ID: 1, Path: path, Text: text, From: "kb"},
			{ID: 2, Title: path, Text: text, From: "search"},
		}}
		for i, line := range strings.Split(history, "\n") {
			role := llm.RoleUser
			if i%2 == 1 {
				role = llm.RoleAssistant
			}
			g.History = append(g.History, llm.Message{Role: role, Content: line})
		}
		in := len(question) + len(path) + 2*len(text) + len(history)
		if fuse != 0 {
			// Fusion: the paragraphs as answers of the three answerers and
			// of one named by the path.
			from := []string{"kb", "search", "llm", path}
			for i, p := range strings.Split(text, "\n\n") {
				g.Answers = append(g.Answers, llm.Draft{From: from[(i+fuse)%len(from)], Text: p, Refusal: i%5 == 4})
				in += len(p) + len(path)
			}
		}
		m := extractive.New(extractive.Options{})
		var streamed strings.Builder
		resp, err := m.Generate(context.Background(), llm.Request{}, g, func(d string) error { streamed.WriteString(d); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(resp.Text) {
			t.Fatalf("reply %q is not valid UTF-8", resp.Text)
		}
		if streamed.String() != resp.Text {
			t.Fatalf("streamed %q, reply %q", streamed.String(), resp.Text)
		}
		if bound := 256 + 16*in; len(resp.Text) > bound {
			t.Fatalf("reply of %d bytes from %d bytes of input (bound %d): %q", len(resp.Text), in, bound, resp.Text)
		}
		if resp.Text == "" {
			t.Fatal("empty reply")
		}
	})
}
