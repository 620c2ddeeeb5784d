package kb

import (
	"context"
	"github.com/mixchat/mixchat/pkg/docstruct"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// zhouyiFiles reads the traditional Zhouyi and the simplified 易传 files.
func zhouyiFiles(t testing.TB) []FileData {
	dir := shareddata.Path(t, "zhouyi")
	b, err := os.ReadFile(filepath.Join(dir, "zhouyi-traditional.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files := []FileData{{Name: "zhouyi-traditional.txt", Data: b}}
	ms, _ := filepath.Glob(filepath.Join(dir, "yizhuan-simplified", "*.txt"))
	for _, m := range ms {
		d, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, FileData{Name: "yizhuan-simplified/" + filepath.Base(m), Data: d})
	}
	return files
}

// newZhouyiKB is a service with the empty knowledge base "zhouyi" (the
// offline hash embedder).
func newZhouyiKB(t *testing.T) *Service {
	t.Helper()
	return newHashKB(t, "zhouyi", nil)
}

// newHashKB is a service in a directory of t's own with the offline hash
// embedder and models, and the empty knowledge base name.
func newHashKB(t *testing.T, name string, models llm.Models) *Service {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	s := newService(t, cfg, retrieve.NewHashEmbedder(512), models)
	var opts CreateOptions
	if name == "zhouyi" {
		// The Zhouyi is read through the demo's profile, as the demo's
		// knowledge base is.
		p := demoProfile(t)
		WithProfiles(p)(s)
		opts.Profile = p.Name
	}
	if _, err := s.Create(context.Background(), name, opts); err != nil {
		t.Fatal(err)
	}
	return s
}

// demoProfile is the demo's profile (demo/zhouyi/profile.json; the
// package demo imports this one).
func demoProfile(t testing.TB) *docstruct.Profile {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "demo", "zhouyi", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := docstruct.LoadProfile(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestZhouyiRetrieval is the knowledge-base acceptance: with the offline
// embedder, "乾卦的卦辞是什么？" (asked in simplified characters) finds the
// chunk of the traditional text that holds 乾卦's judgement first, and a few
// other questions find their passages (in either script). It also checks
// that the relevance scale separates them from questions the Zhouyi does
// not answer.
func TestZhouyiRetrieval(t *testing.T) {
	files := zhouyiFiles(t)
	ctx := context.Background()
	s := newZhouyiKB(t)
	res, err := s.AddFiles(ctx, "zhouyi", files, AddOptions{}, nil)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("ingest: %v %v", err, res.Failed)
	}
	tests := []struct {
		q    string
		want []string // all in the first chunk's text
	}{
		{"乾卦的卦辞是什么？", []string{"乾，元亨，利貞"}},
		{"潜龙勿用是什么意思", []string{"潛龍勿用"}},
		{"履虎尾", []string{"履虎尾"}},
		{"君子以自强不息出自哪里", []string{"自强不息"}},
	}
	var worstGood float64 = 1
	for _, tt := range tests {
		rs, err := s.Search(ctx, SearchRequest{Query: tt.q, KnowledgeBases: []string{"zhouyi"}, TopK: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Errorf("%s: nothing found", tt.q)
			continue
		}
		worstGood = min(worstGood, rs[0].Relevance)
		if tt.q == "乾卦的卦辞是什么？" && rs[0].Relevance < s.DefaultMinRelevance() {
			t.Errorf("%s: relevance %.3f is below the default threshold %.2f: the KB answerer would find nothing", tt.q, rs[0].Relevance, s.DefaultMinRelevance())
		}
		for _, w := range tt.want {
			if !strings.Contains(text.Fold(rs[0].Text), text.Fold(w)) {
				t.Errorf("%s: first chunk (%s, %.3f) lacks %q:\n%s", tt.q, rs[0].File, rs[0].Relevance, w, rs[0].Text)
			}
		}
	}
	for _, q := range []string{"量子计算机的原理是什么", "如何学习Go语言编程", "谁发明了电话"} {
		rs, err := s.Search(ctx, SearchRequest{Query: q, KnowledgeBases: []string{"zhouyi"}, TopK: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) > 0 && rs[0].Relevance >= worstGood {
			t.Errorf("%q (not in the Zhouyi) scores %.3f, as high as a real match (%.3f)", q, rs[0].Relevance, worstGood)
		}
	}
}

// BenchmarkIngestZhouyi measures ingestion (load, split, embed with the
// offline embedder, BM25 terms, one transaction per file, index update) of
// the Zhouyi texts; it reports chunks/s.
func BenchmarkIngestZhouyi(b *testing.B) {
	files := zhouyiFiles(b)
	ctx := context.Background()
	emb := retrieve.NewHashEmbedder(512)
	chunks := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := DefaultConfig()
		cfg.Dir = b.TempDir()
		s, err := newWithStore(cfg, emb, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.Create(ctx, "zhouyi", CreateOptions{})
		b.StartTimer()
		if _, err := s.AddFiles(ctx, "zhouyi", files, AddOptions{}, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		info, _ := s.Info(ctx, "zhouyi")
		chunks += info.Chunks
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
}

// TestZhouyiSingleFile searches a knowledge base holding only the
// traditional Zhouyi under the default threshold, as the server does:
// "乾卦的卦辞是什么？" finds the judgement of 乾 first though that chunk's
// text holds neither 乾卦 nor 卦辞 (its heading, 第一卦乾, does), and
// questions that share no more than a word or a character with a section's
// heading (天水 of 天水訟, 人 of 家人) find nothing.
func TestZhouyiSingleFile(t *testing.T) {
	dir := shareddata.Path(t, "zhouyi")
	data, err := os.ReadFile(filepath.Join(dir, "zhouyi-traditional.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := newZhouyiKB(t)
	mustAdd(t, s, "zhouyi", FileData{Name: "zhouyi-traditional.txt", Data: data})
	search := func(q string) []Result {
		t.Helper()
		rs, err := s.Search(ctx, SearchRequest{Query: q, KnowledgeBases: []string{"zhouyi"}, TopK: 3, MinRelevance: s.DefaultMinRelevance()})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			t.Logf("%s #%d %.3f %s: %.40q", q, i+1, r.Relevance, r.Metadata["section"], r.Text)
		}
		return rs
	}
	const q = "乾卦的卦辞是什么？"
	if rs := search(q); len(rs) == 0 {
		t.Errorf("%s: nothing at relevance ≥ %.2f", q, s.DefaultMinRelevance())
	} else if !strings.Contains(rs[0].Text, "乾，元亨，利貞") {
		t.Errorf("%s: first chunk (%.3f) is not the judgement of 乾:\n%s", q, rs[0].Relevance, rs[0].Text)
	}
	for _, q := range []string{"陈荣捷是哪里人？", "天水围河在哪里？", "量子计算机的原理是什么", "谁发明了电话"} {
		if rs := search(q); len(rs) > 0 {
			t.Errorf("%s (not in the Zhouyi) finds %s at %.3f", q, rs[0].Metadata["section"], rs[0].Relevance)
		}
	}
}
