package kb

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// updateSearchGolden rewrites testdata/search_load.golden:
// go test ./pkg/kb -run TestSearchLoadShaped -update-search-golden
var updateSearchGolden = flag.Bool("update-search-golden", false, "rewrite testdata/search_load.golden")

// loadShapedDoc is one document of the base `mixchat-eval load` searches:
// a title and eight short sections that say nearly the same thing, so
// that most chunks score alike.
func loadShapedDoc(w, i int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# 文档%d-%d\n\n", w, i)
	for j := range 8 {
		fmt.Fprintf(&b, "## 第%d节\n\n乾卦第%d爻，会话%d，第%d次：天行健，君子以自强不息。潜龙勿用，见龙在田。\n\n", j+1, j, w, i)
	}
	return []byte(b.String())
}

// newLoadShapedKB makes a knowledge base shaped like the load's: 201
// files of 8 chunks (1,608 chunks), the offline embedder.
func newLoadShapedKB(tb testing.TB) *Service {
	tb.Helper()
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = tb.TempDir()
	s, err := newWithStore(cfg, retrieve.NewHashEmbedder(0), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if _, err := s.Create(ctx, "load", CreateOptions{}); err != nil {
		tb.Fatal(err)
	}
	files := []FileData{{Name: "qian.md", Data: loadShapedDoc(0, 0)}}
	for w := range 200 {
		files = append(files, FileData{Name: fmt.Sprintf("w%d.md", w), Data: loadShapedDoc(w, 1)})
	}
	if _, err := s.AddFiles(ctx, "load", files, AddOptions{}, nil); err != nil {
		tb.Fatal(err)
	}
	return s
}

// loadShapedQueries are questions over that base: the load's own, parts
// addressed by number and by document, an absent part, an absent
// document, a relative one, words of every chunk, English.
var loadShapedQueries = []string{
	"乾卦是什么意思？",
	"第3节",
	"文档5-1第二节讲了什么",
	"《文档7-1》第9节",
	"《乾坤》",
	"下一节",
	"潜龙勿用",
	"会话42第1次",
	"What does the first section say?",
}

// TestSearchLoadShaped pins the results of searches over the load-shaped
// base (ids, relevances to the last bit, matches, paths, metadata): the cost of a
// search may change, its results may not.
func TestSearchLoadShaped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a base of 1,608 chunks")
	}
	s := newLoadShapedKB(t)
	ctx := context.Background()
	var b strings.Builder
	for _, q := range loadShapedQueries {
		for _, k := range []int{3, 20} {
			rs, err := s.Search(ctx, SearchRequest{Query: q, KnowledgeBases: []string{"load"}, TopK: k})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s top %d\n", q, k)
			for _, r := range rs {
				meta, err := json.Marshal(r.Metadata)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "  %s %.17g %q %q %s", r.ID, r.Relevance, r.Match, r.Path, meta)
				if r.Match != "" {
					fmt.Fprintf(&b, " %q", r.Text) // a chunk's id says its text
				}
				b.WriteString("\n")
			}
		}
	}
	golden := filepath.Join("testdata", "search_load.golden")
	if *updateSearchGolden {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("results changed:\n%s\nwant:\n%s", got, want)
	}
}

// BenchmarkSearchLoadShaped is one search of the load's question over the
// load-shaped base (the knowledge-base search of every request of
// `mixchat-eval load`).
func BenchmarkSearchLoadShaped(b *testing.B) {
	s := newLoadShapedKB(b)
	ctx := context.Background()
	req := SearchRequest{Query: "乾卦是什么意思？", KnowledgeBases: []string{"load"}, MinRelevance: s.DefaultMinRelevance()}
	if _, err := s.Search(ctx, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Search(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTitleOfRepeats checks titleOf's quick path against the section path
// made heading by heading.
func TestTitleOfRepeats(t *testing.T) {
	slow := func(doc, section string) string {
		parts := []string{doc}
		for _, h := range strings.Split(section, " > ") {
			if h != parts[len(parts)-1] {
				parts = append(parts, h)
			}
		}
		return strings.Join(parts, " > ")
	}
	for _, section := range []string{"a", "law", "law > a", "a > a", "a > b > b", "a > b > a", " > ", "a >  > b", "a > ", " > a", "a>b > b>c", "law > law > 第一章"} {
		meta := map[string]any{"section": section}
		if got, want := titleOf("docs/law.md", meta), slow("law", section); got != want {
			t.Errorf("titleOf(law, %q) = %q, want %q", section, got, want)
		}
	}
}
