package kb_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/retrieve"
)

// TestPostgresStoreQdrant runs two replicas (Services) on one PostgreSQL
// store with their vectors in one Qdrant, as the Kubernetes manifests do:
// the in-memory Qdrant always, a real one too when QDRANT_ADDR is set.
// Both need the test PostgreSQL (MIXCHAT_TEST_POSTGRES_DSN).
func TestPostgresStoreQdrant(t *testing.T) {
	t.Run("memQdrant", func(t *testing.T) {
		dsn := kb.PGServiceDSN(t)
		m, _, addr := startMemQdrant(t)
		queries := func() int {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.queries
		}
		testPGQdrant(t, dsn, addr, "", queries)
	})
	t.Run("qdrant", func(t *testing.T) {
		addr := os.Getenv("QDRANT_ADDR")
		if addr == "" {
			t.Skip("QDRANT_ADDR not set: start Qdrant (docs/qdrant.md) and set QDRANT_ADDR=host:6334 to run this against a real Qdrant")
		}
		testPGQdrant(t, kb.PGServiceDSN(t), addr, os.Getenv("QDRANT_API_KEY"), nil)
	})
}

// testPGQdrant: what replica a creates and fills, replica b finds through
// Qdrant (it holds no vectors of its own); deletions and replacements on
// either reach the other and the collection; points without a row are
// never returned; a collection that lost points is refilled from the
// vectors in PostgreSQL by the next replica that opens the knowledge
// base. queries, when not nil, counts the Qdrant server's searches.
func testPGQdrant(t *testing.T, dsn, addr, apiKey string, queries func() int) {
	ctx := context.Background()
	r := make([]byte, 4)
	rand.Read(r)
	prefix := "mixchat_pgtest_" + hex.EncodeToString(r) + "_"
	emb := retrieve.NewHashEmbedder(64)
	replica := func() *kb.Service {
		t.Helper()
		cfg := kb.DefaultConfig()
		cfg.Dir = t.TempDir()
		cfg.EmbedModel = "hash-64"
		cfg.Store, cfg.DSN = kb.KBStorePostgres, dsn
		cfg.VectorStore = kb.StoreQdrant
		cfg.Qdrant.Addr, cfg.Qdrant.APIKey, cfg.Qdrant.CollectionPrefix = addr, apiKey, prefix
		s, err := kb.NewWithStore(cfg, emb, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const name = "周易"
	// The collection as Qdrant holds it, through a client of its own.
	coll := kb.NewQdrantIndex(dialQdrant(t, addr, apiKey), prefix+name)
	t.Cleanup(func() { _ = coll.Drop(context.Background()) })
	points := func() int {
		t.Helper()
		n, err := coll.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	chunks := func(s *kb.Service) int {
		t.Helper()
		info, err := s.Info(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return info.Chunks
	}
	search := func(s *kb.Service, q string) []string {
		t.Helper()
		rs, err := s.Search(ctx, kb.SearchRequest{Query: q, KnowledgeBases: []string{name}, TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, r := range rs {
			files = append(files, r.File)
		}
		return files
	}
	add := func(s *kb.Service, file, text string) {
		t.Helper()
		res, err := s.AddFiles(ctx, name, []kb.FileData{{Name: file, Data: []byte(text)}}, kb.AddOptions{Override: true}, nil)
		if err != nil || len(res.Failed) > 0 || len(res.Added) != 1 {
			t.Fatalf("add %s: %v %v", file, err, res)
		}
	}

	a, b := replica(), replica()
	info, err := a.Create(ctx, name, kb.CreateOptions{Info: "易经"})
	if err != nil {
		t.Fatal(err)
	}
	if info.VectorStore != kb.StoreQdrant {
		t.Fatalf("created with vector store %q, want qdrant", info.VectorStore)
	}
	// b opens the KB while it is empty: it must notice a's writes.
	if got := search(b, "乾卦"); len(got) != 0 {
		t.Fatalf("empty KB found %v", got)
	}
	if open, local := kb.HasLocalVectors(b, name); !open || local {
		t.Fatalf("replica b: open %v, vectors in memory %v: with Qdrant a replica holds none", open, local)
	}

	const qian = "# 乾卦\n\n乾：元，亨，利，贞。\n\n## 象传\n\n天行健，君子以自强不息。\n"
	add(a, "qian.md", qian)
	if n, want := points(), chunks(a); n != want || n == 0 {
		t.Fatalf("Qdrant holds %d points after a's upload, the rows %d", n, want)
	}
	var before int
	if queries != nil {
		before = queries()
	}
	if got := search(b, "乾卦 元亨利贞"); len(got) == 0 || got[0] != "qian.md" {
		t.Errorf("replica b finds %v after replica a added qian.md", got)
	}
	if queries != nil && queries() == before {
		t.Error("replica b's search did not query Qdrant")
	}
	if n, want := kb.LexLen(b, name), chunks(a); n != want {
		t.Errorf("replica b's BM25 holds %d chunks, the rows %d", n, want)
	}

	add(b, "kun.md", "# 坤卦\n\n坤：元，亨，利牝马之贞。地势坤，君子以厚德载物。\n")
	if got := search(a, "坤卦 厚德载物"); len(got) == 0 || got[0] != "kun.md" {
		t.Errorf("replica a finds %v after replica b added kun.md", got)
	}
	// A replacement on b deletes the replaced chunks' points.
	add(b, "kun.md", "# 坤卦\n\n坤：元，亨。君子有攸往，先迷后得主。西南得朋，东北丧朋。安贞吉。\n")
	if n, want := points(), chunks(a); n != want {
		t.Errorf("Qdrant holds %d points after kun.md was replaced, the rows %d", n, want)
	}
	if got := search(a, "西南得朋"); len(got) == 0 || got[0] != "kun.md" {
		t.Errorf("replica a finds %v for the replaced kun.md", got)
	}
	if n, want := kb.LexLen(a, name), chunks(a); n != want {
		t.Errorf("replica a's BM25 holds %d chunks after b replaced kun.md, the rows %d", n, want)
	}

	// Deleting a file on a removes its points, and b stops finding it.
	if failed, err := a.DeleteFiles(ctx, name, []string{"qian.md"}, true); err != nil || len(failed) > 0 {
		t.Fatal(err, failed)
	}
	if n, want := points(), chunks(b); n != want {
		t.Errorf("Qdrant holds %d points after qian.md was deleted, the rows %d", n, want)
	}
	if got := search(b, "乾卦 元亨利贞"); slices.Contains(got, "qian.md") {
		t.Errorf("replica b still finds qian.md after replica a deleted it: %v", got)
	}
	if n, want := kb.LexLen(b, name), chunks(a); n != want {
		t.Errorf("replica b's BM25 holds %d chunks after the deletion, the rows %d", n, want)
	}

	// A point no row names (left by a writer that crashed between its
	// upsert and its commit) is never returned, however close it is.
	q, err := emb.Embed(ctx, []string{"西南得朋"})
	if err != nil {
		t.Fatal(err)
	}
	ghost := kb.Chunk{ID: uuid.NewString(), File: "ghost.md", Text: "西南得朋", Vector: q[0]}
	if err := coll.Upsert(ctx, []kb.Chunk{ghost}); err != nil {
		t.Fatal(err)
	}
	if got := search(b, "西南得朋"); slices.Contains(got, "ghost.md") || len(got) == 0 {
		t.Errorf("replica b finds %v: want kun.md and never the point without a row", got)
	}
	if err := coll.Delete(ctx, kb.Filter{IDs: []string{ghost.ID}}); err != nil {
		t.Fatal(err)
	}

	// Qdrant loses the collection's points: the next replica to open the
	// knowledge base refills them from PostgreSQL and finds through them.
	if err := coll.Delete(ctx, kb.Filter{Files: []string{"kun.md"}}); err != nil {
		t.Fatal(err)
	}
	if n := points(); n != 0 {
		t.Fatalf("%d points left after deleting kun.md's", n)
	}
	c := replica()
	if got := search(c, "西南得朋"); len(got) == 0 || got[0] != "kun.md" {
		t.Errorf("replica c finds %v after the collection was refilled", got)
	}
	if n, want := points(), chunks(c); n != want || n == 0 {
		t.Errorf("Qdrant holds %d points after replica c opened the KB, the rows %d", n, want)
	}

	// Deleting the knowledge base on b drops the collection; a and c stop
	// serving it.
	if err := b.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if n := points(); n != 0 {
		t.Errorf("the collection holds %d points after the knowledge base was deleted", n)
	}
	for _, s := range []*kb.Service{a, c} {
		if _, err := s.Search(ctx, kb.SearchRequest{Query: "坤卦", KnowledgeBases: []string{name}}); !errors.Is(err, kb.ErrNotFound) {
			t.Errorf("searching the deleted KB on another replica: %v, want ErrNotFound", err)
		}
	}
}
