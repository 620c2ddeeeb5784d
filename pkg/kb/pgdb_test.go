package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

func pgTestDSN(t *testing.T) string {
	t.Helper()
	return pgtest.DSN(t)
}

// openPGPair opens one knowledge base's schema twice, as two replicas
// would; it goes with the test's registry schema.
func openPGPair(t *testing.T) (a, b *sql.DB) {
	t.Helper()
	ctx := context.Background()
	cat, err := postgres.OpenKBCatalog(ctx, pgtest.Schema(t, "kbtest"))
	if err != nil {
		t.Fatal(err)
	}
	if a, err = cat.Create(ctx, "乾坤"); err != nil {
		t.Fatal(err)
	}
	if b, err = cat.Open(ctx, "乾坤"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
		cat.Close()
	})
	return a, b
}

func testChunks(file string, n int) []storedChunk {
	out := make([]storedChunk, n)
	for i := range out {
		text := fmt.Sprintf("%s 第%d段：天行健，君子以自强不息。", file, i)
		out[i] = storedChunk{
			Chunk: Chunk{ID: fmt.Sprintf("%s-%d", file, i), File: file, Seq: i, Text: text,
				Metadata: map[string]any{"source": file, "part": float64(i % 2)}, Vector: []float32{1, float32(i), 0.5}},
			Terms: termCounts(lexTerms(text)),
		}
	}
	return out
}

// commit writes file through db as ingestion does: one transaction that
// replaces the rows and bumps the generation.
func commit(ctx context.Context, db *sql.DB, file string, n int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := replaceFile(ctx, tx, FileInfo{Name: file, Hash: "h-" + file, Size: 10}, testChunks(file, n)); err != nil {
		return err
	}
	_, err = commitGeneration(ctx, tx)
	return err
}

// TestPostgresDBRunsTheKBQueries runs db.go's queries, written for SQLite,
// against PostgreSQL through two connections to one knowledge base, with
// writers on both at once.
func TestPostgresDBRunsTheKBQueries(t *testing.T) {
	a, b := openPGPair(t)
	ctx := context.Background()

	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*each)
	for w := range 2 * writers {
		db := a
		if w%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Every writer rewrites a shared file and writes its own.
				if err := commit(ctx, db, "shared.md", 3+i); err != nil {
					errs <- err
				}
				if err := commit(ctx, db, fmt.Sprintf("w%d.md", w), 2); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	g, err := getMeta(ctx, b, "generation")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(2 * 2 * writers * each); g != want {
		t.Errorf("generation %s after %s commits: an increment was lost", g, want)
	}

	files, err := listFiles(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2*writers+1 {
		t.Fatalf("%d files, want %d", len(files), 2*writers+1)
	}
	for _, f := range files {
		ids, err := chunkIDs(ctx, b, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != f.Chunks {
			t.Errorf("%s: %d chunks recorded, %d rows", f.Name, f.Chunks, len(ids))
		}
	}
	if _, err := getFile(ctx, a, "missing.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("getFile(missing) = %v, want ErrNotFound", err)
	}
	got, err := chunksByID(ctx, b, []string{"w1.md-0", "w1.md-1", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["w1.md-1"].Metadata["source"] != "w1.md" {
		t.Errorf("chunksByID = %v", got)
	}
	filtered, err := filterChunks(ctx, a, "w%", map[string]any{"part": 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(filtered) != 2*writers {
		t.Errorf("filterChunks(w%%, part=1) gave %d chunks, want %d", len(filtered), 2*writers)
	}

	tx, err := a.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deleteFileRows(ctx, tx, "w0.md"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := getFile(ctx, b, "w0.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("w0.md still there after its deletion: %v", err)
	}
}

// TestPostgresDBLoadsOnAnotherReplica ingests through one connection and
// opens the knowledge base through the other: the second builds the same
// BM25 and vector indexes from the rows.
func TestPostgresDBLoadsOnAnotherReplica(t *testing.T) {
	dbA, dbB := openPGPair(t)
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EmbedModel = "hash-64"
	emb := retrieve.NewHashEmbedder(64)
	s, err := newWithStore(cfg, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for k, v := range map[string]string{"vector_store": StoreEmbedded, "embed_model": "hash-64", "dim": "0", "lex_version": lexVersion, "generation": "0"} {
		if err := setMeta(ctx, dbA, k, v); err != nil {
			t.Fatal(err)
		}
	}
	newBase := func(db *sql.DB) *base {
		b := &base{name: "乾坤", dir: t.TempDir(), db: db}
		if err := b.load(ctx, s.vs.newStore); err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := newBase(dbA)
	sp, params, err := s.cfg.splitter(SplitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte("# 乾卦\n\n乾：元，亨，利，贞。\n\n## 象传\n\n天行健，君子以自强不息。\n\n# 坤卦\n\n坤：元，亨，利牝马之贞。地势坤，君子以厚德载物。\n")
	res, err := a.ingest(ctx, ingestJob{name: "zhouyi.md", data: doc, save: true, split: sp, params: params}, emb, 8, func(Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if res.chunks == 0 {
		t.Fatal("nothing indexed")
	}
	b := newBase(dbB)
	if a.gen != b.gen || b.gen == 0 {
		t.Errorf("generations: writer %d, reader %d", a.gen, b.gen)
	}
	if a.lex.Len() != b.lex.Len() || b.lex.Len() != res.chunks {
		t.Errorf("BM25 holds %d chunks on the writer, %d on the reader, want %d", a.lex.Len(), b.lex.Len(), res.chunks)
	}
	q := bm25Query("坤卦")
	ha, hb := a.lex.Search(q, 3, nil), b.lex.Search(q, 3, nil)
	if len(hb) == 0 || !slices.Equal(hitIDs(ha), hitIDs(hb)) {
		t.Errorf("BM25 hits differ: writer %v, reader %v", ha, hb)
	}
	vec, err := emb.Embed(ctx, []string{embedText("坤卦")})
	if err != nil {
		t.Fatal(err)
	}
	va, err := a.vec.Search(ctx, vec[0], 3, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	vb, err := b.vec.Search(ctx, vec[0], 3, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vb) == 0 || len(va) != len(vb) || va[0].ID != vb[0].ID {
		t.Errorf("vector hits differ: writer %v, reader %v", va, vb)
	}
}

func hitIDs(hs []retrieve.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

// pgServiceDSN is a schema of t's own for a registry; the knowledge bases'
// schemas named after it go with it (see pgtest.Schema).
func pgServiceDSN(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t, "kbsvc")
}

// newPGService opens a Service on the PostgreSQL store at dsn, as one
// replica would, closed at the end of t.
func newPGService(t *testing.T, dsn string) *Service {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EmbedModel = "hash-64"
	cfg.Store, cfg.DSN = KBStorePostgres, dsn
	s, err := newWithStore(cfg, retrieve.NewHashEmbedder(64), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPostgresStoreTwoReplicas runs two Services, as two replicas would,
// on one PostgreSQL store: what one creates, fills, changes and deletes,
// the other lists and finds.
func TestPostgresStoreTwoReplicas(t *testing.T) {
	dsn := pgServiceDSN(t)
	ctx := context.Background()
	a, b := newPGService(t, dsn), newPGService(t, dsn)
	if _, err := a.Create(ctx, "周易", CreateOptions{Info: "易经"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "周易", CreateOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("creating it again on the other replica: %v, want ErrExists", err)
	}
	if names, err := b.Names(ctx); err != nil || !slices.Equal(names, []string{"周易"}) {
		t.Errorf("replica b lists %v (%v)", names, err)
	}
	search := func(s *Service, q string) []string {
		t.Helper()
		var files []string
		for _, r := range searchKB(t, s, q) { // pgKB is "周易"
			files = append(files, r.File)
		}
		return files
	}
	add := func(s *Service, name, text string) {
		t.Helper()
		res, err := s.AddFiles(ctx, "周易", []FileData{{Name: name, Data: []byte(text)}}, AddOptions{Override: true}, nil)
		if err != nil || len(res.Failed) > 0 {
			t.Fatalf("add %s: %v %v", name, err, res.Failed)
		}
	}
	// b opens the KB (empty) before a fills it: b must notice the change.
	if got := search(b, "乾卦"); len(got) != 0 {
		t.Fatalf("empty KB found %v", got)
	}
	add(a, "qian.md", "# 乾卦\n\n乾：元，亨，利，贞。天行健，君子以自强不息。\n")
	if got := search(b, "乾卦 元亨利贞"); len(got) == 0 || got[0] != "qian.md" {
		t.Errorf("replica b finds %v after replica a added qian.md", got)
	}
	add(b, "kun.md", "# 坤卦\n\n坤：元，亨，利牝马之贞。地势坤，君子以厚德载物。\n")
	if got := search(a, "坤卦 厚德载物"); len(got) == 0 || got[0] != "kun.md" {
		t.Errorf("replica a finds %v after replica b added kun.md", got)
	}
	if _, err := b.DeleteFiles(ctx, "周易", []string{"qian.md"}, true); err != nil {
		t.Fatal(err)
	}
	if got := search(a, "乾卦 元亨利贞"); slices.Contains(got, "qian.md") {
		t.Errorf("replica a still finds qian.md after replica b deleted it: %v", got)
	}
	if info, err := a.Info(ctx, "周易"); err != nil || info.Files != 1 || info.Info != "易经" {
		t.Errorf("replica a: %+v, %v", info, err)
	}
	if err := b.Delete(ctx, "周易"); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Exists(ctx, "周易"); ok || err != nil {
		t.Errorf("replica a still sees the deleted KB: %v, %v", ok, err)
	}
	if _, err := a.Search(ctx, SearchRequest{Query: "坤卦", KnowledgeBases: []string{"周易"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("replica a searching the deleted KB: %v, want ErrNotFound", err)
	}
	if _, err := a.Search(ctx, SearchRequest{Query: "坤卦", KnowledgeBases: []string{"周易"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("replica a searching the deleted KB again: %v, want ErrNotFound", err)
	}
}
