package kb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// fakeEmbedder wraps the offline embedder; fail, when set, is called
// before each batch and can make it fail.
type fakeEmbedder struct {
	inner *retrieve.HashEmbedder
	calls atomic.Int32
	fail  func(call int, texts []string) error
}

func newFakeEmbedder() *fakeEmbedder { return &fakeEmbedder{inner: retrieve.NewHashEmbedder(256)} }

func (e *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	n := int(e.calls.Add(1))
	if e.fail != nil {
		if err := e.fail(n, texts); err != nil {
			return nil, err
		}
	}
	return e.inner.Embed(ctx, texts)
}

// fakeModel answers with a fixed text and records the requests.
type fakeModel struct {
	reply string
	reqs  []llm.Request
	gs    []llm.Grounding // what it was given beside each request (llm.Generator)
}

func (m *fakeModel) Generate(ctx context.Context, req llm.Request, g llm.Grounding, fn func(string) error) (llm.Response, error) {
	m.gs = append(m.gs, g)
	return llm.ModelGenerator{Model: m}.Generate(ctx, req, g, fn)
}

func (m *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.reqs = append(m.reqs, req)
	return llm.Response{Text: m.reply, Model: req.Model}, nil
}

func (m *fakeModel) Stream(ctx context.Context, req llm.Request, fn func(string) error) (llm.Response, error) {
	m.reqs = append(m.reqs, req)
	for _, part := range strings.SplitAfter(m.reply, "，") {
		if err := fn(part); err != nil {
			return llm.Response{}, err
		}
	}
	return llm.Response{Text: m.reply, Model: req.Model}, nil
}

type fakeModels struct{ m *fakeModel }

func (f fakeModels) Get(name string) (llm.Model, string, error) {
	if name == "" {
		name = "fake"
	}
	if name != "fake" {
		return nil, "", fmt.Errorf("unknown model %q", name)
	}
	return f.m, name, nil
}

func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EmbedModel = "hash-256"
	cfg.EmbedBatch = 4
	cfg.ChunkSize = 60
	cfg.ChunkOverlap = 10
	return cfg
}

func newService(t testing.TB, cfg Config, emb llm.Embedder, models llm.Models) *Service {
	t.Helper()
	s, err := newWithStore(cfg, emb, models)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var qianText = "乾卦\n\n乾，元亨，利贞。初九：潜龙勿用。九二：见龙在田，利见大人。九三：君子终日乾乾，夕惕若，厉，无咎。\n"
var kunText = "坤卦\n\n坤，元亨，利牝马之贞。君子有攸往，先迷后得主。利西南得朋，东北丧朋。安贞吉。\n"

func mustAdd(t *testing.T, s *Service, kb string, files ...FileData) AddResult {
	t.Helper()
	res, err := s.AddFiles(context.Background(), kb, files, AddOptions{Override: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("failed: %v", res.Failed)
	}
	return res
}

func search(t *testing.T, s *Service, q string, kbs ...string) []Result {
	t.Helper()
	rs, err := s.Search(context.Background(), SearchRequest{Query: q, KnowledgeBases: kbs, TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestCreateListDelete(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "周易", CreateOptions{Info: "经典"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "周易", CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate: %v", err)
	}
	for _, bad := range []struct {
		name string
		want error
	}{{"", ErrEmptyName}, {"  ", ErrEmptyName}, {"../x", ErrInvalidName}, {"a/b", ErrInvalidName}, {"..", ErrInvalidName}, {"x\x00", ErrInvalidName}} {
		if _, err := s.Create(ctx, bad.name, CreateOptions{}); !errors.Is(err, bad.want) {
			t.Errorf("Create(%q) = %v, want %v", bad.name, err, bad.want)
		}
	}
	if _, err := s.Create(ctx, "x", CreateOptions{VectorStore: "milvus"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("unsupported store: %v", err)
	}
	if _, err := s.Create(ctx, "x", CreateOptions{EmbedModel: "bge-m3"}); !errors.Is(err, ErrEmbedModel) {
		t.Errorf("unavailable embed model: %v", err)
	}
	infos, err := s.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].Name != "周易" || infos[0].Info != "经典" || infos[0].EmbedModel != "hash-256" || infos[0].VectorStore != StoreEmbedded {
		t.Fatalf("list: %+v %v", infos, err)
	}
	if err := s.Delete(ctx, "周易"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "周易"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.Dir, "周易")); !os.IsNotExist(err) {
		t.Errorf("the KB folder should be gone: %v", err)
	}
	if _, err := s.Files(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown KB: %v", err)
	}
}

func TestAddSearchReplaceDedup(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "zy", CreateOptions{})
	res, err := s.AddFiles(ctx, "zy", []FileData{
		{Name: "qian.txt", Data: []byte(qianText)},
		{Name: "kun.md", Data: []byte(kunText)},
		{Name: "bad.xyz", Data: []byte("x")},
		{Name: "broken.pdf", Data: []byte("%PDF-1.4 nonsense")},
		{Name: "../escape.txt", Data: []byte("x")},
	}, AddOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Added)
	if !slices.Equal(res.Added, []string{"kun.md", "qian.txt"}) {
		t.Errorf("added %v", res.Added)
	}
	for f, want := range map[string]error{"bad.xyz": ErrUnsupported, "broken.pdf": ErrCorrupt, "../escape.txt": ErrInvalidName} {
		if !errors.Is(res.Failed[f], want) {
			t.Errorf("%s: %v, want %v", f, res.Failed[f], want)
		}
	}
	rs := search(t, s, "潜龙勿用", "zy")
	if len(rs) == 0 || rs[0].File != "qian.txt" || !strings.Contains(rs[0].Text, "潜龙勿用") {
		t.Fatalf("search: %+v", rs)
	}
	for i, r := range rs {
		if r.Relevance < 0 || r.Relevance > 1 || (i > 0 && r.Relevance > rs[i-1].Relevance) {
			t.Errorf("relevance not in [0,1] best first: %v", rs)
		}
	}

	// Same content again: skipped. Without override: refused.
	res, _ = s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte(qianText)}}, AddOptions{Override: true}, nil)
	if !slices.Equal(res.Skipped, []string{"qian.txt"}) || len(res.Added) != 0 {
		t.Errorf("unchanged content should be skipped: %+v", res)
	}
	res, _ = s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte(qianText)}}, AddOptions{}, nil)
	if !errors.Is(res.Failed["qian.txt"], ErrExists) || len(res.Added)+len(res.Skipped) != 0 {
		t.Errorf("the same file again without override: %+v", res)
	}

	// Changed content replaces the chunks, with or without override.
	res, err = s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte("乾卦\n\n飞龙在天，利见大人。亢龙有悔。\n")}}, AddOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || !slices.Equal(res.Added, []string{"qian.txt"}) {
		t.Fatalf("a changed file without override: %+v %v", res, err)
	}
	for _, r := range search(t, s, "潜龙勿用", "zy") {
		if strings.Contains(r.Text, "潜龙勿用") {
			t.Errorf("old chunk still found: %q", r.Text)
		}
	}
	if rs := search(t, s, "亢龙有悔", "zy"); len(rs) == 0 || !strings.Contains(rs[0].Text, "亢龙有悔") {
		t.Errorf("new chunk not found: %+v", rs)
	}
	fi, err := s.File(ctx, "zy", "qian.txt")
	if err != nil || fi.Chunks != 1 {
		t.Errorf("file record: %+v %v", fi, err)
	}
	p, err := s.OriginalPath(ctx, "zy", "qian.txt")
	if b, _ := os.ReadFile(p); err != nil || !strings.Contains(string(b), "亢龙有悔") {
		t.Errorf("original: %q %v", b, err)
	}
}

// TestStaleOriginalRepaired imitates a crash between the commit of a
// document and the rename of its original into place: uploading the same
// content again finds the index up to date and puts the original back.
func TestStaleOriginalRepaired(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)})
	p, err := s.OriginalPath(ctx, "zy", "qian.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("an older version"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte(qianText)}}, AddOptions{}, nil)
	if err != nil || len(res.Failed) != 0 || !slices.Equal(res.Skipped, []string{"qian.txt"}) {
		t.Fatalf("re-upload: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(p); string(b) != qianText {
		t.Errorf("original not repaired: %q", b)
	}
	res, _ = s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte(qianText)}}, AddOptions{}, nil)
	if !errors.Is(res.Failed["qian.txt"], ErrExists) {
		t.Errorf("once repaired, the same upload is a duplicate: %+v", res)
	}
}

// TestIngestAtomic interrupts the replacement of a document in several ways
// and checks the KB is left exactly as it was.
func TestIngestAtomic(t *testing.T) {
	long := strings.Repeat("飞龙在天，利见大人。亢龙有悔，盈不可久也。", 12)
	cases := []struct {
		name string
		fail func(cancel context.CancelFunc) func(int, []string) error
	}{
		{"embedder fails halfway", func(context.CancelFunc) func(int, []string) error {
			return func(call int, _ []string) error {
				if call == 2 {
					return errors.New("embedding server down")
				}
				return nil
			}
		}},
		{"context cancelled mid-embedding", func(cancel context.CancelFunc) func(int, []string) error {
			return func(call int, _ []string) error {
				if call == 2 {
					cancel()
				}
				return nil
			}
		}},
		{"context cancelled before the commit", func(cancel context.CancelFunc) func(int, []string) error {
			return func(call int, texts []string) error {
				// The last batch: embedding succeeds, then the transaction
				// sees a cancelled context.
				if len(texts) < 4 {
					cancel()
				}
				return nil
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			emb := newFakeEmbedder()
			s := newService(t, testConfig(t), emb, nil)
			bg := context.Background()
			s.Create(bg, "zy", CreateOptions{})
			mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})
			before, _ := s.File(bg, "zy", "qian.txt")
			beforeHits := search(t, s, "潜龙勿用", "zy")

			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			emb.calls.Store(0)
			emb.fail = tc.fail(cancel)
			res, err := s.AddFiles(ctx, "zy", []FileData{{Name: "qian.txt", Data: []byte(long)}}, AddOptions{Override: true}, nil)
			if err == nil && res.Failed["qian.txt"] == nil {
				t.Fatalf("the interrupted upload should fail: %+v", res)
			}
			emb.fail = nil

			after, err := s.File(bg, "zy", "qian.txt")
			if err != nil || after.Hash != before.Hash || after.Chunks != before.Chunks {
				t.Errorf("file record changed: %+v → %+v (%v)", before, after, err)
			}
			afterHits := search(t, s, "潜龙勿用", "zy")
			if len(afterHits) != len(beforeHits) || afterHits[0].ID != beforeHits[0].ID {
				t.Errorf("search changed: %v → %v", beforeHits, afterHits)
			}
			for _, r := range search(t, s, "亢龙有悔", "zy") {
				if strings.Contains(r.Text, "亢龙有悔") {
					t.Errorf("a chunk of the interrupted upload is searchable: %q", r.Text)
				}
			}
			p, _ := s.OriginalPath(bg, "zy", "qian.txt")
			if b, _ := os.ReadFile(p); string(b) != qianText {
				t.Errorf("the original was replaced: %q", b)
			}
			entries, _ := os.ReadDir(filepath.Join(s.cfg.Dir, "zy", contentDir))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".upload-") {
					t.Errorf("temporary file left: %s", e.Name())
				}
			}
			// And the KB still takes the upload afterwards.
			mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(long)})
			if rs := search(t, s, "亢龙有悔", "zy"); len(rs) == 0 {
				t.Error("retry after the interruption failed")
			}
		})
	}
}

func TestReopenUsesSnapshotsAndRebuilds(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s1, _ := newWithStore(cfg, newFakeEmbedder(), nil)
	s1.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s1, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})
	want := search(t, s1, "利牝马之贞", "zy")
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{lexSnapshot, vecSnapshot} {
		if _, err := os.Stat(filepath.Join(cfg.Dir, "zy", f)); err != nil {
			t.Fatalf("snapshot %s not written: %v", f, err)
		}
	}
	s2 := newService(t, cfg, newFakeEmbedder(), nil)
	got := search(t, s2, "利牝马之贞", "zy")
	if len(got) != len(want) || got[0].ID != want[0].ID || got[0].Relevance != want[0].Relevance {
		t.Errorf("after reopen: %v, want %v", got, want)
	}
	s2.Close()

	// Stale snapshots (the database moved on without them) are rebuilt.
	db, err := sqlite.NewKBCatalog(cfg.Dir).Open(ctx, "zy")
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`UPDATE meta SET value = '999' WHERE key = 'generation'`)
	db.Close()
	s3 := newService(t, cfg, newFakeEmbedder(), nil)
	got = search(t, s3, "利牝马之贞", "zy")
	if len(got) != len(want) || got[0].ID != want[0].ID {
		t.Errorf("after rebuild: %v, want %v", got, want)
	}
}

func TestEmbedModelMismatch(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s1, _ := newWithStore(cfg, newFakeEmbedder(), nil)
	s1.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s1, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)})
	s1.Close()

	cfg.EmbedModel = "bge-m3"
	s2 := newService(t, cfg, newFakeEmbedder(), nil)
	_, err := s2.Search(ctx, SearchRequest{Query: "乾", KnowledgeBases: []string{"zy"}})
	if !errors.Is(err, ErrEmbedModel) || !strings.Contains(err.Error(), "hash-256") || !strings.Contains(err.Error(), "bge-m3") {
		t.Fatalf("a KB built with another model must refuse queries clearly: %v", err)
	}
	if _, err := s2.AddFiles(ctx, "zy", []FileData{{Name: "kun.txt", Data: []byte(kunText)}}, AddOptions{}, nil); !errors.Is(err, ErrEmbedModel) {
		t.Errorf("and uploads: %v", err)
	}
	// Rebuilding with the current model fixes it.
	if _, err := s2.Recreate(ctx, "zy", RecreateOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	if info, _ := s2.Info(ctx, "zy"); info.EmbedModel != "bge-m3" || info.Chunks == 0 {
		t.Errorf("after recreate: %+v", info)
	}
	if rs := search(t, s2, "潜龙勿用", "zy"); len(rs) == 0 {
		t.Error("search after recreate found nothing")
	}
}

// qianKunService is a service with two knowledge bases: "a" holds
// qian.txt, "b" kun.txt.
func qianKunService(t *testing.T) *Service {
	t.Helper()
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "a", CreateOptions{})
	s.Create(ctx, "b", CreateOptions{})
	mustAdd(t, s, "a", FileData{Name: "qian.txt", Data: []byte(qianText)})
	mustAdd(t, s, "b", FileData{Name: "kun.txt", Data: []byte(kunText)})
	return s
}

func TestFiltersAndSeveralKBs(t *testing.T) {
	ctx := context.Background()
	s := qianKunService(t)
	rs := search(t, s, "元亨", "a", "b")
	kbs := map[string]bool{}
	for _, r := range rs {
		kbs[r.KnowledgeBase] = true
	}
	if !kbs["a"] || !kbs["b"] {
		t.Errorf("a query over two KBs should find both: %+v", rs)
	}
	rs, err := s.Search(ctx, SearchRequest{Query: "元亨", KnowledgeBases: []string{"a"}, File: "kun%"})
	if err != nil || len(rs) != 0 {
		t.Errorf("file filter: %v %v", rs, err)
	}
	rs, err = s.Search(ctx, SearchRequest{Query: "元亨", KnowledgeBases: []string{"a"}, File: "qi%", Metadata: map[string]any{"source": "qian.txt"}})
	if err != nil || len(rs) == 0 {
		t.Errorf("file and metadata filter: %v %v", rs, err)
	}
	chunks, err := s.ListChunks(ctx, "a", "qian.txt", nil)
	if err != nil || len(chunks) == 0 || chunks[0].Seq != 0 {
		t.Errorf("list chunks: %v %v", chunks, err)
	}
	if _, err := s.Search(ctx, SearchRequest{Query: "x", KnowledgeBases: []string{"a", "nope"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown KB in a query: %v", err)
	}
	// A threshold above every score keeps nothing.
	rs, _ = s.Search(ctx, SearchRequest{Query: "元亨", KnowledgeBases: []string{"a"}, MinRelevance: 0.999})
	if len(rs) != 0 {
		t.Errorf("threshold 0.999: %v", rs)
	}
}

func TestDeleteUpdateRecreate(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})

	failed, err := s.DeleteFiles(ctx, "zy", []string{"kun.txt", "nope.txt"}, true)
	if err != nil || !errors.Is(failed["nope.txt"], ErrNotFound) || failed["kun.txt"] != nil {
		t.Fatalf("delete: %v %v", failed, err)
	}
	for _, r := range search(t, s, "利牝马之贞", "zy") {
		if r.File == "kun.txt" {
			t.Error("deleted file still found")
		}
	}
	if _, err := s.OriginalPath(ctx, "zy", "kun.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete_content should remove the original: %v", err)
	}

	// Custom docs, then update from the original with another chunk size.
	res, err := s.AddFiles(ctx, "zy", nil, AddOptions{Docs: map[string][]Document{"faq.md": {{Text: "问：乾卦的卦辞？答：元亨利贞。"}}}}, nil)
	if err != nil || !slices.Equal(res.Added, []string{"faq.md"}) {
		t.Fatalf("custom docs: %+v %v", res, err)
	}
	res, err = s.UpdateFiles(ctx, "zy", []string{"qian.txt", "faq.md", "gone.txt"}, UpdateOptions{SplitOptions: SplitOptions{ChunkSize: 30}}, nil)
	if err != nil || !slices.Equal(res.Added, []string{"qian.txt"}) || !errors.Is(res.Failed["gone.txt"], ErrNotFound) {
		t.Fatalf("update: %+v %v", res, err)
	}
	if fi, _ := s.File(ctx, "zy", "qian.txt"); fi.ChunkSize != 30 {
		t.Errorf("update should re-split with chunk_size 30: %+v", fi)
	}

	// A file copied into the content folder by hand is indexed by Recreate;
	// documents without an original (the custom docs) go.
	os.WriteFile(filepath.Join(s.cfg.Dir, "zy", contentDir, "kun2.txt"), []byte(kunText), 0o644)
	var events []string
	res, err = s.Recreate(ctx, "zy", RecreateOptions{}, func(p Progress) {
		if p.Stage != StageEmbed && p.Stage != StageStart {
			events = append(events, fmt.Sprintf("%d/%d %s %s", p.Index, p.Total, p.File, p.Stage))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(events, []string{"1/2 kun2.txt done", "2/2 qian.txt done"}) {
		t.Errorf("progress: %q", events)
	}
	names, _ := s.Files(ctx, "zy")
	var got []string
	for _, f := range names {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, []string{"kun2.txt", "qian.txt"}) {
		t.Errorf("after recreate: %v", got)
	}

	// Recreate of a missing KB: created when allowed, else not found.
	if _, err := s.Recreate(ctx, "new", RecreateOptions{}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("recreate of a missing KB without allow_empty: %v", err)
	}
	if _, err := s.Recreate(ctx, "new", RecreateOptions{AllowEmpty: true}, nil); err != nil {
		t.Fatalf("recreate a missing KB with AllowEmpty: %v", err)
	}
	if ok, err := s.Exists(ctx, "new"); !ok || err != nil {
		t.Errorf("recreate with allow_empty: %v", err)
	}
}

func TestAnswer(t *testing.T) {
	ctx := context.Background()
	model := &fakeModel{reply: "元亨，利贞。"}
	cfg := testConfig(t)
	cfg.DefaultKnowledgeBases = []string{"zy"}
	s := newService(t, cfg, newFakeEmbedder(), fakeModels{model})
	s.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})

	var streamed strings.Builder
	ans, err := s.Answer(ctx, rag.Query{Text: "它的卦辞呢？", Standalone: "乾卦的卦辞是什么？潜龙勿用", ScoreThreshold: 0.01,
		History: []llm.Message{{Role: llm.RoleUser, Content: "乾卦"}}}, func(d string) error {
		streamed.WriteString(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ans.From != "kb" || ans.Text != "元亨，利贞。" || streamed.String() != ans.Text || ans.Empty {
		t.Errorf("answer %+v streamed %q", ans, streamed.String())
	}
	req, g := model.reqs[0], model.gs[0]
	if g.Question != "乾卦的卦辞是什么？潜龙勿用" || len(g.Evidence) == 0 || g.Evidence[0].ID != 1 || g.Evidence[0].Path == "" || len(g.History) != 0 {
		t.Errorf("the grounding holds the standalone question and the numbered chunks under their paths: %+v", g)
	}
	// The question's terms come with their BM25 idf in the knowledge base
	// of two chunks: "潜龙" is in one, and "卦辞", in none, weighs like it.
	for _, tm := range lexTerms(g.Question) {
		if w := g.Weights[tm]; math.Abs(w-math.Log(2)) > 1e-9 {
			t.Errorf("term %q weighs %g, want ln 2: %v", tm, w, g.Weights)
		}
	}
	if len(req.Messages) != 1 || !strings.Contains(req.Messages[0].Content, "<指令>根据已知信息") || !strings.Contains(req.Messages[0].Content, "[1] ") ||
		!strings.Contains(req.Messages[0].Content, "乾卦的卦辞是什么？潜龙勿用") { // retrieval strips question words; the prompt does not
		t.Errorf("strict prompt with numbered chunks and no history expected: %q", req.Messages)
	}
	if len(ans.Sources) == 0 || ans.Sources[0].File != "qian.txt" || ans.Sources[0].KB != "zy" ||
		ans.Sources[0].URL != "/knowledge_base/download_doc?file_name=qian.txt&knowledge_base_name=zy" {
		t.Errorf("sources: %+v", ans.Sources)
	}

	// The mix's evidence budget bounds the chunks the prompt and the
	// grounding carry: the first kept, cut to fit.
	ans, err = s.Answer(ctx, rag.Query{Text: "乾卦的卦辞是什么？潜龙勿用", ScoreThreshold: 0.01, EvidenceTokens: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g = model.gs[len(model.gs)-1]
	if len(g.Evidence) != 1 || llm.Estimate(g.Evidence[0].Text) > 8 || len(ans.Sources) != 1 {
		t.Errorf("an 8-token budget keeps one chunk cut to fit: %d evidence (%+v), %d sources", len(g.Evidence), g.Evidence, len(ans.Sources))
	}

	// Nothing passes the threshold: "nothing found", marked Empty, and no
	// model call.
	calls := len(model.reqs)
	streamed.Reset()
	ans, err = s.Answer(ctx, rag.Query{Text: "量子计算机的原理", ScoreThreshold: 0.99}, func(d string) error {
		streamed.WriteString(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Empty || len(ans.Sources) != 0 || !strings.Contains(ans.Text, "没有找到") || streamed.String() != ans.Text || len(model.reqs) != calls {
		t.Errorf("empty answer: %+v streamed %q, %d model calls (want %d)", ans, streamed.String(), len(model.reqs), calls)
	}

	// No KB named and none configured.
	s.cfg.DefaultKnowledgeBases = nil
	if _, err := s.Answer(ctx, rag.Query{Text: "x"}, nil); !errors.Is(err, ErrBadRequest) {
		t.Errorf("no KB: %v", err)
	}
}

type fakeReranker struct{ scores func(docs []string) []float64 }

func (f fakeReranker) Rerank(ctx context.Context, q string, docs []string) ([]float64, error) {
	return f.scores(docs), nil
}

func TestReranker(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s, _ := newWithStore(cfg, newFakeEmbedder(), nil, WithReranker(fakeReranker{func(docs []string) []float64 {
		out := make([]float64, len(docs))
		for i, d := range docs {
			if strings.Contains(d, "坤") {
				out[i] = 3 // a logit: squashed into [0,1]
			} else {
				out[i] = -3
			}
		}
		return out
	}}))
	t.Cleanup(func() { s.Close() })
	s.Create(ctx, "zy", CreateOptions{})
	mustAdd(t, s, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})
	rs := search(t, s, "潜龙勿用", "zy")
	if len(rs) == 0 || rs[0].File != "kun.txt" || rs[0].Relevance < 0.9 || rs[0].Relevance > 1 {
		t.Errorf("the reranker's order and scores should win: %+v", rs)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ChunkSize = 0 }, "kb.chunk_size"},
		{func(c *Config) { c.ChunkOverlap = 300 }, "kb.chunk_overlap"},
		{func(c *Config) { c.VectorStore = "faiss" }, `kb.vector_store is "faiss": use "embedded" or "qdrant"`},
		{func(c *Config) { c.ScoreThreshold = 3 }, "kb.score_threshold"},
		{func(c *Config) { c.ChunkUnit = "words" }, "kb.chunk_unit"},
		{func(c *Config) { c.Dir = "" }, "kb.dir"},
		{func(c *Config) { c.TopK = 0 }, "kb.top_k"},
		{func(c *Config) { c.Reranker.Enabled = true }, "kb.reranker.base_url"},
		{func(c *Config) { c.DefaultKnowledgeBases = []string{"../x"} }, "kb.default_knowledge_bases"},
		{func(c *Config) { c.VectorStore = StoreQdrant; c.Qdrant.Addr = "" }, "kb.qdrant.addr"},
		{func(c *Config) { c.Store = KBStorePostgres }, "kb.dsn is empty"},
		{func(c *Config) {
			c.Store, c.DSN, c.VectorStore, c.Qdrant.Addr = KBStorePostgres, "postgres://db/mixchat", StoreQdrant, ""
		}, "kb.qdrant.addr"},
		{func(c *Config) { c.Store = "sqlite" }, `kb.store is "sqlite"`},
	}
	// Either store with either vector store.
	for _, vs := range []string{StoreEmbedded, StoreQdrant} {
		c := DefaultConfig()
		c.Store, c.DSN, c.VectorStore = KBStorePostgres, "postgres://db/mixchat", vs
		if err := c.Validate(); err != nil {
			t.Errorf("kb.store postgres with kb.vector_store %s: %v", vs, err)
		}
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.edit(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("want an error naming %q, got %v", tt.want, err)
		}
	}
}

func TestNamesAndDistances(t *testing.T) {
	for name, ok := range map[string]bool{"zhouyi": true, "周易 2": true, "": false, "../x": false, "a/b": false, `a\b`: false, ".": false, " x": false} {
		if got := ValidName(name) == nil; got != ok {
			t.Errorf("ValidName(%q) ok = %v, want %v", name, got, ok)
		}
	}
	for name, ok := range map[string]bool{"wiki/Home.md": true, "a.txt": true, "../a.txt": false, "/etc/passwd": false, "a//b": false, "a/./b": false} {
		if got := ValidFileName(name) == nil; got != ok {
			t.Errorf("ValidFileName(%q) ok = %v, want %v", name, got, ok)
		}
	}
	for _, tt := range []struct{ d, r float64 }{{0, 1}, {1, 0.5}, {2, 0}, {1.5, 0}} {
		if got := DistanceToRelevance(tt.d); got != tt.r {
			t.Errorf("DistanceToRelevance(%v) = %v, want %v", tt.d, got, tt.r)
		}
	}
	if d := RelevanceToDistance(0.5); d != 1 {
		t.Errorf("RelevanceToDistance(0.5) = %v", d)
	}
}

// TestConcurrentUse searches while documents are added and another KB is
// deleted (run with -race).
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	s := qianKunService(t)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := s.Search(ctx, SearchRequest{Query: "元亨", KnowledgeBases: []string{"a"}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 5 {
		text := fmt.Sprintf("第%d篇\n\n利见大人。元亨利贞。%s", i, strings.Repeat("君子终日乾乾。", i+1))
		if _, err := s.AddFiles(ctx, "a", []FileData{{Name: fmt.Sprintf("f%d.txt", i), Data: []byte(text)}}, AddOptions{Override: true}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if info, _ := s.Info(ctx, "a"); info.Files != 6 {
		t.Errorf("files: %+v", info)
	}
}

// TestEmbedderCalibration: the hash embedder reports its calibration,
// which sets the relevance scale and the vector weight; an embedder without
// one (an embedding model) keeps the plain scale; kb.vector_weight wins.
func TestEmbedderCalibration(t *testing.T) {
	for _, tc := range []struct {
		name           string
		emb            llm.Embedder
		weight         float64
		wantW, wantMid float64
	}{
		{"hash", retrieve.NewHashEmbedder(256), 0, 0.25, 0.36},
		{"uncalibrated", newFakeEmbedder(), 0, 0.5, 0.5},
		{"configured weight", retrieve.NewHashEmbedder(256), 0.8, 0.8, 0.36},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.VectorWeight = tc.weight
			s := newService(t, cfg, tc.emb, nil)
			if s.vectorWeight != tc.wantW || s.scale().mid != tc.wantMid {
				t.Errorf("vector weight %v, relevance mid %v; want %v, %v", s.vectorWeight, s.scale().mid, tc.wantW, tc.wantMid)
			}
		})
	}
}
