package memory

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/prompts"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/prompts")

// TestPromptsGolden renders every memory prompt with fixed data and
// compares it with testdata/prompts/GROUP.NAME.golden (go test -update
// rewrites them).
func TestPromptsGolden(t *testing.T) {
	lines := []string{"Human: 我的名字是李雷，我在学习周易。", "AI: 很好，李雷。周易共有六十四卦。", "Human: Can you give me their registration links?"}
	for _, tt := range []struct {
		group, name string
		data        any
	}{
		{summaryGroup, "default", summaryData{Summary: "The human asks about the Zhouyi.", Lines: lines, MaxWords: 150}},
		{summaryGroup, "default", summaryData{Lines: lines[:1], MaxWords: 30}},
		{entityGroup, "default", linesData{Lines: lines, Known: []string{"user", "李雷"}}},
		{triplesGroup, "default", linesData{Lines: lines}},
		{condenseGroup, "default", condenseData{Lines: lines[:2], Question: "它的第一卦是什么？"}},
		{factsGroup, "default", linesData{Lines: lines, Known: []string{"The user lives in Hangzhou."}}},
		{longTermGroup, "default", longTermData{Summary: "The user studies the Zhouyi.", Facts: []string{"The user is called Li Lei."}}},
		{longTermGroup, "default", longTermData{Facts: []string{"The user is called Li Lei."}}},
		{longTermGroup, "zh", longTermData{Summary: "用户在学习周易。", Facts: []string{"用户叫李雷。", "用户住在杭州。"}}},
	} {
		got, err := prompts.Render(tt.group, tt.name, tt.data)
		if err != nil {
			t.Fatalf("%s.%s: %v", tt.group, tt.name, err)
		}
		file := tt.group + "." + tt.name
		if sd, ok := tt.data.(summaryData); ok && sd.Summary == "" {
			file += ".first"
		}
		if ld, ok := tt.data.(longTermData); ok && ld.Summary == "" {
			file += ".facts_only"
		}
		path := filepath.Join("testdata", "prompts", file+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s rendered differently from %s:\n--- got\n%s\n--- want\n%s", file, path, got, want)
		}
	}
}
