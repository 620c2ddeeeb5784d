package search

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/shareddata"
)

func TestLocalZhouyi(t *testing.T) {
	dir := shareddata.Path(t, "zhouyi/yizhuan-simplified")
	l, err := NewLocal(LocalOptions{Dir: dir, Refresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() < 100 {
		t.Fatalf("indexed %d files, want the whole folder", l.Len())
	}
	rs, err := l.Search(context.Background(), "系辞 易有太极", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no results")
	}
	top := rs[0]
	if top.Title != "系辞传上-第十一章" {
		for _, r := range rs {
			t.Logf("%s %.3f %s", r.Title, r.Score, r.Snippet)
		}
		t.Fatalf("top result %q, want 系辞传上-第十一章", top.Title)
	}
	u, err := url.Parse(top.URL)
	if err != nil || u.Scheme != "local" || u.Opaque != (&url.URL{Path: "系辞传上-第十一章.txt"}).EscapedPath() || strings.Contains(top.URL, dir) {
		t.Errorf("URL %q is not the file's path relative to the folder", top.URL)
	}
	if !boldContains(top.Snippet, "太极") {
		t.Errorf("snippet %q does not highlight 太极", top.Snippet)
	}
	if !strings.Contains(top.Content, "太极") || strings.Contains(top.Content, "**") {
		t.Errorf("content %q should be the plain passage with 太极", top.Content)
	}
	if top.Score <= 0 || top.Score > 1 || top.Engine != "local" {
		t.Errorf("score %v engine %q", top.Score, top.Engine)
	}
	for _, r := range rs[1:] {
		if r.Score > top.Score {
			t.Errorf("results not best first: %v after %v", r.Score, top.Score)
		}
	}

	// The same question in traditional characters finds the same chapter,
	// as the knowledge bases' terms fold 繫辭 to 系辞.
	rs, err = l.Search(context.Background(), "繫辭 易有太極", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Title != "系辞传上-第十一章" || !boldContains(rs[0].Snippet, "太极") {
		t.Errorf("traditional query: %v", titles(rs))
	}
}

func writeFile(t *testing.T, path, body string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func titles(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Title)
	}
	return out
}

func TestLocalFormatsAndUpdates(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	writeFile(t, filepath.Join(dir, "qian.html"), `<html><head><title>乾卦</title><style>.x{}</style></head>
<body><nav>菜单</nav><h1>乾</h1><p>天行健，君子以自强不息。</p><script>var 太极=1</script></body></html>`, t0)
	writeFile(t, filepath.Join(dir, "notes", "kun.md"), "# 坤卦\n\n地势坤，君子以厚德载物。\n", t0)
	writeFile(t, filepath.Join(dir, "taiji.txt"), "易有太极，是生两仪。", t0)
	writeFile(t, filepath.Join(dir, ".hidden", "secret.txt"), "太极 secret", t0)
	writeFile(t, filepath.Join(dir, "image.png"), "太极", t0)
	l, err := NewLocal(LocalOptions{Dir: dir, Refresh: 0})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("indexed %d files, want 3 (html, md, txt; hidden and other types skipped)", l.Len())
	}
	ctx := context.Background()
	cases := []struct {
		q    string
		want []string
		url  string // the first result's, relative to the folder
	}{
		{"自强不息", []string{"乾卦"}, "local:qian.html"},
		{"厚德载物", []string{"坤卦"}, "local:notes/kun.md"},
		{"太极", []string{"taiji"}, "local:taiji.txt"}, // not the script, the hidden file or the png
	}
	for _, c := range cases {
		rs, err := l.Search(ctx, c.q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := titles(rs); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%q: got %v, want %v", c.q, got, c.want)
		}
		if len(rs) > 0 && rs[0].URL != c.url {
			t.Errorf("%q: URL %q, want %q", c.q, rs[0].URL, c.url)
		}
	}

	// A change, an addition and a removal are seen by the next search.
	writeFile(t, filepath.Join(dir, "taiji.txt"), "两仪生四象，四象生八卦。", t0.Add(time.Minute))
	writeFile(t, filepath.Join(dir, "new.txt"), "易有太极。", t0)
	if err := os.Remove(filepath.Join(dir, "notes", "kun.md")); err != nil {
		t.Fatal(err)
	}
	rs, err := l.Search(ctx, "太极", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(rs); len(got) != 1 || got[0] != "new" {
		t.Errorf("after changes, 太极 found %v, want [new]", got)
	}
	if rs, _ := l.Search(ctx, "厚德载物", 5); len(rs) != 0 {
		t.Errorf("removed file still found: %v", titles(rs))
	}
	if rs, _ := l.Search(ctx, "八卦", 5); len(rs) != 1 || rs[0].Title != "taiji" {
		t.Errorf("changed file not re-indexed: %v", titles(rs))
	}
	if rs, err := l.Search(ctx, "，。", 5); err != nil || len(rs) != 0 {
		t.Errorf("punctuation-only query: %v %v", rs, err)
	}
}

func TestLocalRefreshInterval(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "alpha text", time.Now())
	l, err := NewLocal(LocalOptions{Dir: dir, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "b.txt"), "beta text", time.Now())
	if rs, _ := l.Search(context.Background(), "beta", 5); len(rs) != 0 {
		t.Errorf("folder re-listed before the refresh interval: %v", titles(rs))
	}
	if n, err := l.Refresh(context.Background()); err != nil || n != 1 {
		t.Fatalf("Refresh = %d, %v; want 1 change", n, err)
	}
	if rs, _ := l.Search(context.Background(), "beta", 5); len(rs) != 1 {
		t.Errorf("after Refresh: %v", titles(rs))
	}
}

func TestNewLocalErrors(t *testing.T) {
	if _, err := NewLocal(LocalOptions{Dir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing folder accepted")
	}
	f := filepath.Join(t.TempDir(), "file.txt")
	writeFile(t, f, "x", time.Now())
	if _, err := NewLocal(LocalOptions{Dir: f}); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("file as folder: %v", err)
	}
}

func TestHighlight(t *testing.T) {
	q := map[string]bool{}
	for _, s := range []string{"太极", "两仪", "heaven"} {
		q[s] = true
	}
	cases := []struct{ in, want string }{
		{"易有太极，是生两仪。", "易有**太极**，是生**两仪**。"},
		{"The Heavens move.", "The **Heavens** move."},
		{"无关", "无关"},
		{"易有太極，是生兩儀。", "易有**太極**，是生**兩儀**。"}, // traditional text, simplified terms
	}
	for _, c := range cases {
		if got := highlight(c.in, q); got != c.want {
			t.Errorf("highlight(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// boldContains reports whether one of the **bold** spans of s contains sub.
func boldContains(s, sub string) bool {
	parts := strings.Split(s, "**")
	for i := 1; i < len(parts); i += 2 {
		if strings.Contains(parts[i], sub) {
			return true
		}
	}
	return false
}

// BenchmarkLocalIndex measures building the local index over the Zhouyi
// commentaries (168 files).
func BenchmarkLocalIndex(b *testing.B) {
	dir := shareddata.Path(b, "zhouyi/yizhuan-simplified")
	for b.Loop() {
		if _, err := NewLocal(LocalOptions{Dir: dir, Refresh: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLocalSearch measures one search, with and without the folder
// check that keeps the index up to date.
func BenchmarkLocalSearch(b *testing.B) {
	dir := shareddata.Path(b, "zhouyi/yizhuan-simplified")
	for _, bc := range []struct {
		name    string
		refresh time.Duration
	}{{"cached", -1}, {"check-folder-every-search", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := NewLocal(LocalOptions{Dir: dir, Refresh: bc.refresh})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				if _, err := l.Search(ctx, "系辞 易有太极", 5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLocalSearchDoesNotWaitForScan: a search that finds the folder being
// re-listed (here: the scan lock held) searches the index as it is
// instead of waiting.
func TestLocalSearchDoesNotWaitForScan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "taiji.txt"), "易有太极，是生两仪。", time.Now().Add(-time.Hour))
	l, err := NewLocal(LocalOptions{Dir: dir, Refresh: 0})
	if err != nil {
		t.Fatal(err)
	}
	l.scanMu.Lock() // a scan in progress
	defer l.scanMu.Unlock()
	done := make(chan []Result, 1)
	go func() {
		rs, err := l.Search(context.Background(), "太极", 5)
		if err != nil {
			t.Error(err)
		}
		done <- rs
	}()
	select {
	case rs := <-done:
		if len(rs) != 1 {
			t.Errorf("results %v, want the indexed file", rs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a search waits for another's scan")
	}
}
