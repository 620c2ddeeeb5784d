package mix_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/prompts"
)

// zhouyiPersona is the persona of the prompts' golden files: the demo
// knowledge base's, which these Zhouyi examples go with.
const zhouyiPersona = "你是一个知无不言言无不尽的易学（周易）专家"

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestPromptsGolden renders every mix_chat template with fixed data and
// compares it with testdata/NAME.golden; go test -update rewrites them.
func TestPromptsGolden(t *testing.T) {
	full := mix.PromptData{
		Persona:    zhouyiPersona,
		Question:   "它的卦辞是什么意思？",
		Standalone: "乾卦的卦辞“元亨利贞”是什么意思？",
		Dialog: []llm.Message{
			{Role: llm.RoleSystem, Content: "用户在学习《周易》。"},
			{Role: llm.RoleUser, Content: "乾卦是第几卦？"},
			{Role: llm.RoleAssistant, Content: "乾卦是六十四卦的第一卦。"},
		},
		Answers: []mix.PromptAnswer{
			{N: 1, From: rag.LLM, Text: "“元亨利贞”是乾卦的四德：元为始，亨为通，利为和，贞为正。"},
			{N: 2, From: rag.KB, Text: "《周易·乾》：乾，元亨利贞。《文言》曰：元者，善之长也；亨者，嘉之会也。"},
			{N: 3, From: rag.Search, Text: "网络资料称，元亨利贞意为大吉大利、宜于守正。"},
		},
		KB:  []mix.PromptPassage{{N: 1, Title: "周易·乾", Text: "乾，元亨利贞。"}, {N: 2, Title: "文言传", Text: "元者，善之长也；亨者，嘉之会也；利者，义之和也；贞者，事之干也。"}},
		Web: []mix.PromptPassage{{N: 3, Title: "元亨利贞 - 百科", URL: "https://example.org/yuanhengli", Text: "元亨利贞，出自《周易》，意为大吉大利，宜于守正。"}},
	}
	bare := mix.PromptData{Persona: zhouyiPersona, Question: "乾卦是什么意思？",
		Answers: full.Answers[:2], KB: full.KB[:1]}
	compressed := full
	compressed.Context = "用户先问了乾卦的次序，现在问卦辞的含义。"
	cases := map[string]mix.PromptData{"full": full, "bare": bare, "compressed": compressed}
	names := prompts.Names(mix.PromptGroup)
	for _, want := range []string{"default", "context", "en", "context_en"} {
		if !prompts.Has(mix.PromptGroup, want) {
			t.Errorf("template mix_chat.%s missing (have %v)", want, names)
		}
	}
	for _, name := range names {
		for cname, data := range cases {
			t.Run(name+"/"+cname, func(t *testing.T) {
				got, err := prompts.Render(mix.PromptGroup, name, data)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(got, "<no value>") || strings.Contains(got, "\n\n\n") {
					t.Errorf("rendered prompt has a hole or a blank-line run:\n%s", got)
				}
				path := filepath.Join("testdata", "mix_chat."+name+"."+cname+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("mix_chat.%s (%s) differs from %s (go test -update rewrites it):\n%s", name, cname, path, got)
				}
			})
		}
	}
}
