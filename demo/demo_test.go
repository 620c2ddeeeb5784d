package demo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
	"github.com/mixchat/mixchat/pkg/text"
)

// newKB opens the knowledge bases below dataDir as the server does with
// the offline embedder.
func newKB(t *testing.T, dataDir string) *kb.Service {
	t.Helper()
	cfg := kb.DefaultConfig()
	cfg.Dir = filepath.Join(dataDir, "kb")
	prof, err := StructureProfile()
	if err != nil {
		t.Fatal(err)
	}
	s, err := kb.New(cfg, sqlite.NewKBCatalog(cfg.Dir), retrieve.NewHashEmbedder(512), nil, kb.WithProfiles(prof))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// countingKBs counts the knowledge bases Bootstrap creates.
type countingKBs struct {
	*kb.Service
	created int
}

func (c *countingKBs) Create(ctx context.Context, name string, opts kb.CreateOptions) (kb.Info, error) {
	c.created++
	return c.Service.Create(ctx, name, opts)
}

func TestBootstrapFirstRun(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	opts := Options{DataDir: data, SearchDir: filepath.Join(data, "search")}
	kbs := &countingKBs{Service: newKB(t, data)}
	res, err := Bootstrap(ctx, kbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.KnowledgeBase != KnowledgeBase || !res.CreatedKB || res.Pages != len(wings) {
		t.Fatalf("first run: %+v, want the %s knowledge base created and %d pages", res, KnowledgeBase, len(wings))
	}
	if info, err := kbs.Info(ctx, KnowledgeBase); err != nil || info.Profile != "zhouyi" {
		t.Errorf("the demo's knowledge base names the profile %q (%v), want zhouyi", info.Profile, err)
	}

	rs, err := kbs.Search(ctx, kb.SearchRequest{Query: "乾卦的卦辞是什么？", KnowledgeBases: []string{KnowledgeBase}, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || !strings.Contains(text.Fold(rs[0].Text), text.Fold("元亨，利貞")) {
		t.Fatalf("乾卦的卦辞是什么？: top chunk lacks 元亨利貞: %+v", rs)
	}
	if rs[0].Relevance < kbs.DefaultMinRelevance() {
		t.Errorf("top chunk's relevance %.3f is below the default threshold %.2f: the answerer would find nothing", rs[0].Relevance, kbs.DefaultMinRelevance())
	}

	local, err := search.NewLocal(search.LocalOptions{Dir: opts.SearchDir})
	if err != nil {
		t.Fatal(err)
	}
	found, err := local.Search(ctx, "天行健 君子以自强不息", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 || !strings.Contains(found[0].Title, "象传上") {
		t.Errorf("local search for 天行健: %+v, want 周易·象传上 first", found)
	}

	// A second start creates nothing and still names the default.
	res, err = Bootstrap(ctx, kbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.KnowledgeBase != KnowledgeBase || res.CreatedKB || res.Pages != 0 || kbs.created != 1 {
		t.Errorf("second start: %+v, %d creations; want the default kept and nothing created", res, kbs.created)
	}

	// Once the user deleted the demo, it is not re-created.
	if err := kbs.Delete(ctx, KnowledgeBase); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(opts.SearchDir); err != nil {
		t.Fatal(err)
	}
	res, err = Bootstrap(ctx, kbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res != (Result{}) || kbs.created != 1 {
		t.Errorf("after the user deleted the demo: %+v, %d creations; want nothing", res, kbs.created)
	}
	if _, err := os.Stat(opts.SearchDir); !os.IsNotExist(err) {
		t.Errorf("search folder re-created: %v", err)
	}
}

func TestBootstrapLeavesUserDataAlone(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	opts := Options{DataDir: data, SearchDir: filepath.Join(data, "search")}
	kbs := &countingKBs{Service: newKB(t, data)}
	if _, err := kbs.Service.Create(ctx, "mine", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(opts.SearchDir, "notes.md")
	if err := os.MkdirAll(opts.SearchDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("# my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Bootstrap(ctx, kbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res != (Result{}) || kbs.created != 0 {
		t.Errorf("with the user's data: %+v, %d creations; want nothing", res, kbs.created)
	}
	names, err := kbs.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"mine"}) {
		t.Errorf("knowledge bases %v, want only the user's", names)
	}
	es, err := os.ReadDir(opts.SearchDir)
	if err != nil || len(es) != 1 {
		t.Errorf("search folder holds %v (%v), want only the user's notes.md", es, err)
	}
}

func TestPages(t *testing.T) {
	pages, err := Pages()
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 10 {
		t.Fatalf("%d pages, want the Ten Wings", len(pages))
	}
	tests := []struct {
		page  string
		first string // the first section's opening
		holds string
	}{
		{"彖传上.md", "乾卦·彖传上：大哉乾元", "大哉乾元"},
		{"象传下.md", "遯卦·象传下：天下有山", "天下有山"}, // the source puts 咸 and 恒 in 象传上
		{"系辞传上.md", "第一章·系辞传上：天尊地卑", "天尊地卑"},
		{"说卦传.md", "第一章·说卦传：", "昔者圣人之作易也"},
		{"文言传.md", "乾文言·文言传：", "元者善之长也"},
	}
	for _, tt := range tests {
		p := string(pages[tt.page])
		title, rest, _ := strings.Cut(p, "\n\n")
		if want := "# 周易·" + strings.TrimSuffix(tt.page, ".md"); title != want {
			t.Errorf("%s: title %q, want %q", tt.page, title, want)
		}
		if !strings.HasPrefix(rest, tt.first) {
			t.Errorf("%s: first section does not open with %q:\n%.200s", tt.page, tt.first, rest)
		}
		if !strings.Contains(strings.NewReplacer("，", "", "、", "", "；", "", " ", "").Replace(p), tt.holds) {
			t.Errorf("%s lacks %q", tt.page, tt.holds)
		}
	}
	xici := string(pages["系辞传上.md"])
	if i, j := strings.Index(xici, "\n第二章·"), strings.Index(xici, "\n第十二章·"); i < 0 || j < i {
		t.Error("系辞传上.md: chapters missing or out of order")
	}
}

func TestChapterNumber(t *testing.T) {
	tests := map[string]int{"第一章": 1, "第九章": 9, "第十章": 10, "第十一章": 11, "第二十三章": 23, "上篇": 1, "下篇": 2, "全文": 1000}
	for in, want := range tests {
		if got := chapterNumber(in); got != want {
			t.Errorf("chapterNumber(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestJudgements(t *testing.T) {
	trad, err := texts.ReadFile("zhouyi/zhouyi-traditional.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Judgements(trad)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"## 第一卦 乾\n\n乾卦的卦辞是：乾，元亨，利貞。\n",
		"## 第十卦 履\n\n履卦的卦辞是：履，履虎尾，不咥人，亨。\n",
		"## 第六十四卦 未济\n\n未济卦的卦辞是：未濟，亨，小狐汔濟，濡其尾，無攸利。\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("judgements lack %q", want)
		}
	}
	if n := strings.Count(s, "\n## "); n != 64 {
		t.Errorf("%d hexagrams, want 64", n)
	}
	for n, want := range map[int]string{1: "一", 10: "十", 11: "十一", 20: "二十", 64: "六十四"} {
		if got := numeral(n); got != want || chapterNumber("第"+got+"章") != n {
			t.Errorf("numeral(%d) = %q, want %q (and back)", n, got, want)
		}
	}
}
