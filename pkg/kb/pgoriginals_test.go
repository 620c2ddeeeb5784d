package kb

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

// The originals with kb.store postgres: kept in the knowledge base's
// originals table, written in the transaction of the file's chunks, so
// every replica downloads them and rebuilds from them.

const pgKB = "周易"

// qianDoc has bytes a text round trip would change (a BOM, CRLF, a
// trailing space and no final newline): a download must return them as
// uploaded.
var qianDoc = []byte("\ufeff# 乾卦\r\n\r\n乾：元，亨，利，贞。 \r\n\r\n## 象传\r\n\r\n天行健，君子以自强不息。潜龙勿用，阳在下也。见龙在田，德施普也。终日乾乾，反复道也。")

var kunDoc = []byte("# 坤卦\n\n坤：元，亨，利牝马之贞。\n\n## 象传\n\n地势坤，君子以厚德载物。履霜坚冰，阴始凝也。直方大，不习无不利。\n")

// twoReplicas starts two Services on one PostgreSQL store with the
// knowledge base pgKB created on a.
func twoReplicas(t *testing.T) (a, b *Service) {
	t.Helper()
	dsn := pgServiceDSN(t)
	a, b = newPGService(t, dsn), newPGService(t, dsn)
	if _, err := a.Create(context.Background(), pgKB, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func pgAdd(t *testing.T, s *Service, opts AddOptions, files ...FileData) {
	t.Helper()
	res, err := s.AddFiles(context.Background(), pgKB, files, opts, nil)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("add: %v %v", err, res.Failed)
	}
}

// download reads a document's original through s.
func download(t *testing.T, s *Service, file string) ([]byte, error) {
	t.Helper()
	o, err := s.Original(context.Background(), pgKB, file)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	data, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != int64(len(data)) || o.ModTime.IsZero() || o.Name != file {
		t.Errorf("original %s: name %q, size %d for %d bytes, mtime %v", file, o.Name, o.Size, len(data), o.ModTime)
	}
	return data, nil
}

// noLocalOriginals checks that s kept no original in its own folder.
func noLocalOriginals(t *testing.T, s *Service) {
	t.Helper()
	files, err := contentFiles(s.cfg.kbDir(pgKB))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("originals written to the replica's folder %s: %v", s.cfg.kbDir(pgKB), files)
	}
}

// searchFiles searches pgKB on s and returns the hits.
func searchKB(t *testing.T, s *Service, q string) []Result {
	t.Helper()
	rs, err := s.Search(context.Background(), SearchRequest{Query: q, KnowledgeBases: []string{pgKB}, TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// inSync checks that s's in-memory indexes of pgKB hold exactly the
// chunks in the database (after a search, which refreshes them).
func inSync(t *testing.T, s *Service) {
	t.Helper()
	s.mu.Lock()
	b := s.open[pgKB]
	s.mu.Unlock()
	if b == nil {
		t.Fatal("knowledge base not open")
	}
	ids, err := allChunkIDs(context.Background(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	b.mem.mu.RLock()
	var mem []string
	for id := range b.mem.pay {
		mem = append(mem, id)
	}
	b.mem.mu.RUnlock()
	slices.Sort(mem)
	if !slices.Equal(ids, mem) || b.lex.Len() != len(ids) {
		t.Errorf("replica's indexes differ from the rows: %d rows, %d vectors, %d in BM25", len(ids), len(mem), b.lex.Len())
	}
	// The same ids are not enough: the terms and vectors must be the
	// rows' too (a chunk id reused for other text would keep stale ones).
	ctx := context.Background()
	rows, err := b.db.QueryContext(ctx, `SELECT id, file, seq, text, metadata, terms, vector FROM chunks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	fresh := retrieve.NewBM25(retrieve.BM25Params{})
	for rows.Next() {
		c, err := scanChunk(rows, true)
		if err != nil {
			t.Fatal(err)
		}
		fresh.AddCounts(c.ID, c.Terms)
		hits, err := b.mem.Search(ctx, c.Vector, 1, Filter{IDs: []string{c.ID}})
		if err != nil || len(hits) != 1 || hits[0].Score < 0.9999 {
			t.Errorf("chunk %s (%.20q): the replica's vector is not the row's: %v %v", c.ID, c.Text, hits, err)
		}
	}
	for _, q := range []string{"潜龙勿用", "厚德载物", "乾卦 元亨利贞", "象传"} {
		terms := bm25Query(q)
		want, got := fresh.Search(terms, 10, nil), b.lex.Search(terms, 10, nil)
		if !slices.Equal(hitIDs(want), hitIDs(got)) {
			t.Errorf("BM25 for %q: the replica finds %v, the rows give %v", q, got, want)
		}
	}
}

func fileInfo(t *testing.T, s *Service, file string) FileInfo {
	t.Helper()
	f, err := s.File(context.Background(), pgKB, file)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestPostgresOriginalsOnEveryReplica: a document uploaded to replica a is
// downloaded byte for byte from replica b, re-indexed from its stored
// original on b (another chunk size, which a then searches), replaced
// from either replica, kept by a delete without delete_content and
// removed by one with it; no replica writes an original to its folder.
func TestPostgresOriginalsOnEveryReplica(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	pgAdd(t, a, AddOptions{}, FileData{Name: "qian.md", Data: qianDoc}, FileData{Name: "kun.md", Data: kunDoc})

	got, err := download(t, b, "qian.md")
	if err != nil {
		t.Fatalf("download from replica b: %v", err)
	}
	if !bytes.Equal(got, qianDoc) {
		t.Errorf("replica b's download differs from the upload:\n got %q\nwant %q", got, qianDoc)
	}
	// The same upload again is refused on the other replica too: it
	// compares with the stored original.
	res, err := b.AddFiles(ctx, pgKB, []FileData{{Name: "qian.md", Data: qianDoc}}, AddOptions{}, nil)
	if err != nil || !errors.Is(res.Failed["qian.md"], ErrExists) {
		t.Errorf("re-uploading the same bytes on replica b: %v %v, want ErrExists", err, res.Failed)
	}

	// update_docs on b with another chunk size: b re-reads the original
	// from the database; a follows.
	before := fileInfo(t, a, "qian.md")
	res, err = b.UpdateFiles(ctx, pgKB, []string{"qian.md"}, UpdateOptions{SplitOptions: SplitOptions{ChunkSize: 20, ChunkOverlap: 4}}, nil)
	if err != nil || len(res.Failed) > 0 || !slices.Equal(res.Added, []string{"qian.md"}) {
		t.Fatalf("update on replica b: %v %+v", err, res)
	}
	after := fileInfo(t, a, "qian.md")
	if after.ChunkSize != 20 || after.Chunks <= before.Chunks || after.Hash != before.Hash {
		t.Errorf("re-indexed with chunk size 20: before %+v, after %+v", before, after)
	}
	rs := searchKB(t, a, "潜龙勿用")
	if len(rs) == 0 || rs[0].File != "qian.md" || !strings.Contains(rs[0].Text, "潜龙勿用") || len([]rune(rs[0].Text)) > 40 {
		t.Errorf("replica a's hits after the re-split on b: %+v", rs)
	}
	inSync(t, a)

	// A changed upload on b replaces the original a serves.
	v2 := append(bytes.Clone(qianDoc), []byte("\r\n飞龙在天，利见大人。")...)
	pgAdd(t, b, AddOptions{Override: true}, FileData{Name: "qian.md", Data: v2})
	if got, err := download(t, a, "qian.md"); err != nil || !bytes.Equal(got, v2) {
		t.Errorf("replica a after the re-upload on b: %q, %v", got, err)
	}

	// delete_content=false keeps the original (update_docs can bring the
	// document back); true removes it, in the transaction of the rows.
	if failed, err := b.DeleteFiles(ctx, pgKB, []string{"kun.md"}, false); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	if got, err := download(t, a, "kun.md"); err != nil || !bytes.Equal(got, kunDoc) {
		t.Errorf("original after a delete without delete_content: %q, %v", got, err)
	}
	if res, err := a.UpdateFiles(ctx, pgKB, []string{"kun.md"}, UpdateOptions{}, nil); err != nil || len(res.Added) != 1 {
		t.Errorf("update_docs from the kept original: %v %+v", err, res)
	}
	if failed, err := b.DeleteFiles(ctx, pgKB, []string{"kun.md"}, true); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	if _, err := download(t, a, "kun.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("download after delete with delete_content: %v, want ErrNotFound", err)
	}
	s := a.open[pgKB]
	if _, _, ok, err := getOriginal(ctx, s.db, "kun.md"); ok || err != nil {
		t.Errorf("kun.md's original row outlives its deletion (%v)", err)
	}
	if res, err := a.UpdateFiles(ctx, pgKB, []string{"kun.md"}, UpdateOptions{}, nil); err != nil || !errors.Is(res.Failed["kun.md"], ErrNotFound) {
		t.Errorf("update_docs without an original: %v %+v, want ErrNotFound", err, res)
	}
	// An original stored without indexing (to_vector_store=false) on a is
	// indexed from b.
	pgAdd(t, a, AddOptions{SaveOnly: true}, FileData{Name: "kun.md", Data: kunDoc})
	if res, err := b.UpdateFiles(ctx, pgKB, []string{"kun.md"}, UpdateOptions{}, nil); err != nil || len(res.Added) != 1 {
		t.Errorf("update_docs on b of an original saved on a: %v %+v", err, res)
	}
	noLocalOriginals(t, a)
	noLocalOriginals(t, b)

	// The originals go with the knowledge base.
	if err := b.Delete(ctx, pgKB); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, pgKB, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := download(t, b, "qian.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an original outlived its knowledge base: %v", err)
	}
}

// TestPostgresRecreateFromOriginals: recreate_vector_store on replica b
// re-splits and re-embeds every stored original with progress per file,
// drops documents that have none, and replica a searches the new chunks.
// A KB built with another embedding model is emptied and rebuilt, which a
// picks up as well (a new epoch: the same chunk ids, other vectors).
func TestPostgresRecreateFromOriginals(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	pgAdd(t, a, AddOptions{}, FileData{Name: "qian.md", Data: qianDoc}, FileData{Name: "kun.md", Data: kunDoc})
	// Custom docs without a file have no original: a rebuild drops them.
	pgAdd(t, a, AddOptions{Docs: map[string][]Document{"notes.md": {{Text: "大哉乾元，万物资始，乃统天。"}}}})
	if rs := searchKB(t, a, "厚德载物"); len(rs) == 0 || rs[0].File != "kun.md" {
		t.Fatalf("before: %+v", rs)
	}

	var events []Progress
	res, err := b.Recreate(ctx, pgKB, RecreateOptions{SplitOptions: SplitOptions{ChunkSize: 24, ChunkOverlap: 4}}, func(p Progress) {
		if p.Stage == StageDone || p.Stage == StageFailed {
			events = append(events, p)
		}
	})
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("recreate on replica b: %v %v", err, res.Failed)
	}
	if len(events) != 2 || events[0].File != "kun.md" || events[1].File != "qian.md" ||
		events[0].Stage != StageDone || events[1].Index != 2 || events[1].Total != 2 {
		t.Errorf("progress: %+v", events)
	}
	files, err := a.Files(ctx, pgKB)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].ChunkSize != 24 || files[1].ChunkSize != 24 {
		t.Errorf("after the rebuild: %+v", files)
	}
	rs := searchKB(t, a, "厚德载物")
	if len(rs) == 0 || rs[0].File != "kun.md" || !strings.Contains(rs[0].Text, "厚德载物") || len([]rune(rs[0].Text)) > 48 {
		t.Errorf("replica a after the rebuild on b: %+v", rs)
	}
	inSync(t, a)
	noLocalOriginals(t, b)

	// Built with another model (as after a change of kb.embed_model):
	// recreate empties it in one transaction with the new settings and
	// rebuilds; a, which has it open, reloads everything.
	bb := b.open[pgKB]
	if err := setMeta(ctx, bb.db, "embed_model", "old-model"); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	delete(b.open, pgKB) // reopened with the old model recorded
	b.mu.Unlock()
	bb.close()
	epoch := a.open[pgKB].epoch
	if res, err := b.Recreate(ctx, pgKB, RecreateOptions{}, nil); err != nil || len(res.Added) != 2 {
		t.Fatalf("recreate over another model: %v %+v", err, res)
	}
	rs = searchKB(t, a, "潜龙勿用")
	if len(rs) == 0 || rs[0].File != "qian.md" {
		t.Errorf("replica a after the reset on b: %+v", rs)
	}
	if a.open[pgKB].epoch == epoch {
		t.Error("replica a did not see the new epoch")
	}
	if info, err := a.Info(ctx, pgKB); err != nil || info.EmbedModel != "hash-64" || info.Files != 2 {
		t.Errorf("replica a: %+v %v", info, err)
	}
	inSync(t, a)
}

// TestPostgresOriginalCrashSafety: the original is written in the
// transaction of the file's rows, so a transaction that fails (here: a
// chunk whose metadata cannot be stored, after the original was written
// in it) leaves neither a new original nor a changed one behind, and the
// file as it was.
func TestPostgresOriginalCrashSafety(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	bad := map[string][]Document{"kun.md": {{Text: "地势坤，君子以厚德载物。", Metadata: map[string]any{"weight": math.NaN()}}}}
	res, err := a.AddFiles(ctx, pgKB, []FileData{{Name: "kun.md", Data: kunDoc}}, AddOptions{Docs: bad}, nil)
	if err != nil || res.Failed["kun.md"] == nil {
		t.Fatalf("a chunk that cannot be stored must fail the file: %v %+v", err, res)
	}
	db := a.open[pgKB].db
	if _, _, ok, err := getOriginal(ctx, db, "kun.md"); ok || err != nil {
		t.Errorf("a failed upload left its original behind (%v)", err)
	}
	if _, err := download(t, b, "kun.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("replica b serves the original of a failed upload: %v", err)
	}
	// A failed replacement keeps the old original and rows.
	pgAdd(t, a, AddOptions{}, FileData{Name: "kun.md", Data: kunDoc})
	before := fileInfo(t, b, "kun.md")
	res, err = b.AddFiles(ctx, pgKB, []FileData{{Name: "kun.md", Data: qianDoc}}, AddOptions{Override: true, Docs: bad}, nil)
	if err != nil || res.Failed["kun.md"] == nil {
		t.Fatalf("failed replacement: %v %+v", err, res)
	}
	if got, err := download(t, a, "kun.md"); err != nil || !bytes.Equal(got, kunDoc) {
		t.Errorf("after a failed replacement the original is %q (%v), want the old one", got, err)
	}
	if after := fileInfo(t, a, "kun.md"); after.Hash != before.Hash || after.Chunks != before.Chunks {
		t.Errorf("a failed replacement changed the file: %+v → %+v", before, after)
	}
	// The same at the level of the transaction: nothing of it remains.
	if _, _, err := a.open[pgKB].commitFile(ctx, FileInfo{Name: "x.md", Hash: "h"}, []storedChunk{{Chunk: Chunk{ID: "x", File: "x.md", Metadata: map[string]any{"bad": math.Inf(1)}}}}, []byte("x")); err == nil {
		t.Fatal("commitFile with an unstorable chunk succeeded")
	}
	if _, _, ok, err := getOriginal(ctx, db, "x.md"); ok || err != nil {
		t.Errorf("a rolled-back transaction left an original (%v)", err)
	}
	noLocalOriginals(t, a)
	noLocalOriginals(t, b)
}

// TestPostgresOriginalSizeLimit: with the PostgreSQL store a file larger
// than kb.max_upload_bytes is refused (an HTTP upload cannot be larger;
// the CLI is held to the same), and a limit PostgreSQL cannot store is a
// configuration error.
func TestPostgresOriginalSizeLimit(t *testing.T) {
	dsn := pgServiceDSN(t)
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.EmbedModel = "hash-64"
	cfg.Store, cfg.DSN = KBStorePostgres, dsn
	cfg.MaxUploadBytes = postgres.MaxOriginal + 1
	if _, err := newWithStore(cfg, retrieve.NewHashEmbedder(64), nil); err == nil || !strings.Contains(err.Error(), "kb.max_upload_bytes") {
		t.Errorf("a limit above what PostgreSQL stores: %v", err)
	}
	cfg.MaxUploadBytes = int64(len(kunDoc))
	s, err := newWithStore(cfg, retrieve.NewHashEmbedder(64), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Create(ctx, pgKB, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := s.AddFiles(ctx, pgKB, []FileData{{Name: "qian.md", Data: qianDoc}, {Name: "kun.md", Data: kunDoc}}, AddOptions{}, nil)
	if err != nil || !errors.Is(res.Failed["qian.md"], ErrBadRequest) || !slices.Equal(res.Added, []string{"kun.md"}) {
		t.Errorf("over the limit: %v %+v", err, res)
	}
	if _, err := s.Original(ctx, pgKB, "qian.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an original over the limit was stored: %v", err)
	}
}

// TestPostgresLegacyLocalOriginal: an original an older version left in a
// replica's folder is served and rebuilt from when it is the indexed
// version, and moves into the database on update; a stale one is ignored.
func TestPostgresLegacyLocalOriginal(t *testing.T) {
	a, b := twoReplicas(t)
	ctx := context.Background()
	pgAdd(t, a, AddOptions{}, FileData{Name: "qian.md", Data: qianDoc}, FileData{Name: "kun.md", Data: kunDoc})
	db := a.open[pgKB].db
	// As an older version stored them: only in a's folder.
	for name, data := range map[string][]byte{"qian.md": qianDoc, "kun.md": []byte("stale")} {
		if _, err := deleteOriginal(ctx, db, name); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(a.cfg.kbDir(pgKB), contentDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := download(t, a, "qian.md"); err != nil || !bytes.Equal(got, qianDoc) {
		t.Errorf("legacy original on its replica: %v", err)
	}
	if _, err := download(t, a, "kun.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a stale legacy original is served: %v", err)
	}
	if _, err := download(t, b, "qian.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("replica b: %v, want ErrNotFound before the original moved", err)
	}
	if res, err := a.UpdateFiles(ctx, pgKB, []string{"qian.md"}, UpdateOptions{}, nil); err != nil || len(res.Failed) > 0 {
		t.Fatal(err, res.Failed)
	}
	if got, err := download(t, b, "qian.md"); err != nil || !bytes.Equal(got, qianDoc) {
		t.Errorf("replica b after update_docs on a moved the original: %v", err)
	}
}
