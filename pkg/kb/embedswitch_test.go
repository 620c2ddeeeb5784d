package kb

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// TestRecreateWithAnotherEmbedder: a knowledge base built with one embedder
// (256 dimensions) is refused by a service embedding with another (64),
// rebuilt by Recreate, and then searched with the new vectors, also after
// reopening, and also when a snapshot of the old dimension was left at the
// current generation (as a version that kept the old dimension of an
// emptied index saved it).
func TestRecreateWithAnotherEmbedder(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	old := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := old.Create(ctx, "zy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, old, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)}, FileData{Name: "kun.txt", Data: []byte(kunText)})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.EmbedModel = "hash-64"
	open := func() *Service { return newService(t, cfg, retrieve.NewHashEmbedder(64), nil) }
	found := func(s *Service, when string) {
		t.Helper()
		rs, err := s.Search(ctx, SearchRequest{Query: "潜龙勿用", KnowledgeBases: []string{"zy"}, TopK: 3})
		if err != nil {
			t.Fatalf("%s: search: %v", when, err)
		}
		if len(rs) == 0 || rs[0].File != "qian.txt" {
			t.Fatalf("%s: search found %v, want qian.txt first", when, rs)
		}
		if info, err := s.Info(ctx, "zy"); err != nil || info.Dim != 64 || info.EmbedModel != "hash-64" {
			t.Fatalf("%s: info %+v, %v; want dim 64 of hash-64", when, info, err)
		}
	}

	s := open()
	if _, err := s.Search(ctx, SearchRequest{Query: "潜龙勿用", KnowledgeBases: []string{"zy"}, TopK: 3}); !errors.Is(err, ErrEmbedModel) {
		t.Fatalf("search before the rebuild: %v, want ErrEmbedModel", err)
	}
	res, err := s.Recreate(ctx, "zy", RecreateOptions{}, nil)
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("recreate: %v, failed %v", err, res.Failed)
	}
	found(s, "after the rebuild")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	found(s, "after reopening")

	// A stale snapshot of the old dimension at the current epoch.
	b, release, err := s.get(ctx, "zy")
	if err != nil {
		t.Fatal(err)
	}
	epoch := b.epoch
	release()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeSnapshot(filepath.Join(cfg.kbDir("zy"), vecSnapshot), epoch, "", retrieve.NewHNSW(256, retrieve.HNSWParams{})); err != nil {
		t.Fatal(err)
	}
	found(open(), "after reopening over a snapshot of the old dimension")
}

// TestMemIndexEmptiedTakesNewDimension: an index emptied (wholly or chunk by
// chunk, as a replica following a rebuild does) holds vectors of another
// dimension next.
func TestMemIndexEmptiedTakesNewDimension(t *testing.T) {
	ctx := context.Background()
	for _, empty := range []Filter{{}, {IDs: []string{"a", "b"}}} {
		m := NewMemIndex(0)
		if err := m.Upsert(ctx, []Chunk{{ID: "a", Vector: []float32{1, 0, 0}}, {ID: "b", Vector: []float32{0, 1, 0}}}); err != nil {
			t.Fatal(err)
		}
		if err := m.Delete(ctx, empty); err != nil {
			t.Fatal(err)
		}
		if hits, err := m.Search(ctx, []float32{1, 0}, 3, Filter{}); err != nil || len(hits) != 0 {
			t.Errorf("empty index: search of another dimension: %v, %v; want nothing", hits, err)
		}
		if err := m.Upsert(ctx, []Chunk{{ID: "c", Vector: []float32{1, 0}}}); err != nil {
			t.Fatalf("emptied by %+v: upsert of another dimension: %v", empty, err)
		}
		hits, err := m.Search(ctx, []float32{1, 0}, 3, Filter{})
		if err != nil || len(hits) != 1 || hits[0].ID != "c" {
			t.Errorf("emptied by %+v: search %v, %v; want c", empty, hits, err)
		}
		if err := m.Upsert(ctx, []Chunk{{ID: "d", Vector: []float32{1, 0, 0}}}); err == nil {
			t.Errorf("a non-empty index took a vector of another dimension")
		}
	}
}
