package search

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/rag"
)

// searxURL returns the address of the real searx server started by
// scripts/searx.sh, skipping the test when there is none.
func searxURL(t *testing.T) string {
	u := os.Getenv("MIXCHAT_TEST_SEARX_URL")
	if u == "" {
		t.Skip(`MIXCHAT_TEST_SEARX_URL not set: run eval "$(scripts/searx.sh start)" to test against a real searx server`)
	}
	return u
}

// TestSearxIntegration exercises the SearxNG client against a real searx
// server whose `command` engine greps testdata/searx/corpus.txt.
func TestSearxIntegration(t *testing.T) {
	base := searxURL(t)
	ctx := context.Background()
	s := NewSearxNG(ProviderOptions{Name: "searx", BaseURL: base, Language: "zh-CN", Categories: []string{"general"}})

	rs, err := s.Search(ctx, "太极 两仪", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].URL != "https://zhouyi.example/xici/shang-11" || rs[0].Title != "系辞传上·第十一章" ||
		!strings.Contains(rs[0].Snippet, "易》有太极") || rs[0].Engine != "searx" {
		t.Fatalf("results %+v", rs)
	}

	rs, err = s.Search(ctx, "Great Ultimate", 5)
	if err != nil || len(rs) != 1 || rs[0].Title != "The Great Ultimate (Taiji)" {
		t.Errorf("English query: %+v, %v", rs, err)
	}
	rs, err = s.Search(ctx, "君子", 20) // two matches; the second page is empty
	if err != nil || len(rs) != 2 {
		t.Errorf("君子: %+v, %v", rs, err)
	}
	rs, err = s.Search(ctx, "量子计算", 5)
	if err != nil || rs == nil || len(rs) != 0 {
		t.Errorf("no match: %+v, %v", rs, err)
	}
}

// TestSearxIntegrationAnswer answers through the Service with the real
// searx as the configured engine.
func TestSearxIntegrationAnswer(t *testing.T) {
	base := searxURL(t)
	cfg := DefaultConfig()
	cfg.Default = "searx"
	cfg.Engines = []EngineConfig{{Name: "searx", Provider: "searxng", BaseURL: base, Language: "zh-CN"}}
	m := &fakeModel{reply: citeFirst}
	s := newTestService(t, cfg, m)
	var streamed string
	a, err := s.Answer(context.Background(), rag.Query{Text: "自强不息", TopK: 3}, func(d string) error { streamed += d; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if a.Empty || len(a.Sources) != 1 || a.Sources[0].URL != "https://zhouyi.example/xiang/qian" || a.Text != streamed ||
		!strings.Contains(a.Text, "天行健，君子以自强不息[1]。") {
		t.Errorf("answer %+v", a)
	}
	if p := m.calls()[0].Messages[0].Content; !strings.Contains(p, "[1] 象传·乾\nhttps://zhouyi.example/xiang/qian\n天行健，君子以自强不息。") {
		t.Errorf("prompt:\n%s", p)
	}
}
