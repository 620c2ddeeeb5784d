// Package indextest is the conformance suite every kb.Index passes: the
// embedded index and Qdrant run the same tests, so a knowledge base behaves
// the same whichever store holds its vectors.
package indextest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/kb"
)

// New returns an empty index for one test; the test cleans up after it
// through t.Cleanup.
type New func(t *testing.T) kb.Index

// Dim is the dimension of the suite's vectors.
const Dim = 8

// id makes a stable UUID (Qdrant accepts UUIDs and integers as point ids).
func id(n int) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(fmt.Sprintf("indextest-%d", n))).String()
}

// vec is a unit vector pointing mostly along axis a, a little along b.
func vec(a, b int, w float64) []float32 {
	v := make([]float32, Dim)
	v[a%Dim] = 1
	v[b%Dim] += float32(w)
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// corpus is six chunks in two files with metadata.
func corpus() []kb.Chunk {
	return []kb.Chunk{
		{ID: id(0), File: "a.txt", Seq: 0, Text: "a0", Metadata: map[string]any{"page": 1, "lang": "zh"}, Vector: vec(0, 1, 0)},
		{ID: id(1), File: "a.txt", Seq: 1, Text: "a1", Metadata: map[string]any{"page": 2, "lang": "zh"}, Vector: vec(0, 1, 0.3)},
		{ID: id(2), File: "a.txt", Seq: 2, Text: "a2", Metadata: map[string]any{"page": 2, "lang": "en"}, Vector: vec(1, 2, 0.2)},
		{ID: id(3), File: "b.txt", Seq: 0, Text: "b0", Metadata: map[string]any{"page": 1, "lang": "en"}, Vector: vec(0, 2, 0.5)},
		{ID: id(4), File: "b.txt", Seq: 1, Text: "b1", Metadata: map[string]any{"page": 3, "lang": "zh"}, Vector: vec(3, 4, 0.1)},
		{ID: id(5), File: "b.txt", Seq: 2, Text: "b2", Metadata: map[string]any{"page": 3, "lang": "en"}, Vector: vec(5, 6, 0.1)},
	}
}

func ids(hits []kb.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// mustSearch searches x, failing t on an error.
func mustSearch(t *testing.T, x kb.Index, v []float32, k int, f kb.Filter) []kb.Hit {
	t.Helper()
	hits, err := x.Search(context.Background(), v, k, f)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// Run runs the suite against indexes made by newIndex.
func Run(t *testing.T, newIndex New) {
	ctx := context.Background()
	load := func(t *testing.T) kb.Index {
		x := newIndex(t)
		if err := x.Upsert(ctx, corpus()); err != nil {
			t.Fatalf("upsert: %v", err)
		}
		return x
	}

	t.Run("EmptySearch", func(t *testing.T) {
		x := newIndex(t)
		hits, err := x.Search(ctx, vec(0, 1, 0), 3, kb.Filter{})
		if err != nil || len(hits) != 0 {
			t.Fatalf("an empty index returns nothing: %v, %v", hits, err)
		}
	})

	t.Run("BestFirstScoresInUnitRange", func(t *testing.T) {
		x := load(t)
		hits := mustSearch(t, x, vec(0, 1, 0), 3, kb.Filter{})
		want := []string{id(0), id(1), id(3)}
		if !slices.Equal(ids(hits), want) {
			t.Fatalf("hits %v, want %v", ids(hits), want)
		}
		if math.Abs(hits[0].Score-1) > 1e-4 {
			t.Errorf("an identical vector scores 1, got %v", hits[0].Score)
		}
		for i, h := range hits {
			if h.Score < 0 || h.Score > 1 {
				t.Errorf("score %v out of [0,1]", h.Score)
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Errorf("hits not best first: %v", hits)
			}
		}
	})

	t.Run("OrthogonalScoresZero", func(t *testing.T) {
		x := load(t)
		hits := mustSearch(t, x, vec(7, 7, 0), 6, kb.Filter{})
		for _, h := range hits {
			if h.Score > 1e-4 {
				t.Errorf("an orthogonal vector should score 0, %s scored %v", h.ID, h.Score)
			}
		}
	})

	t.Run("FilterByFile", func(t *testing.T) {
		x := load(t)
		hits := mustSearch(t, x, vec(0, 1, 0), 6, kb.Filter{Files: []string{"b.txt"}})
		if len(hits) != 3 || hits[0].ID != id(3) {
			t.Fatalf("file filter: %v", ids(hits))
		}
	})

	t.Run("FilterByMetadata", func(t *testing.T) {
		x := load(t)
		hits := mustSearch(t, x, vec(0, 1, 0), 6, kb.Filter{Metadata: map[string]any{"lang": "en", "page": 2}})
		if !slices.Equal(ids(hits), []string{id(2)}) {
			t.Fatalf("metadata filter: %v", ids(hits))
		}
	})

	t.Run("FilterByIDs", func(t *testing.T) {
		x := load(t)
		hits := mustSearch(t, x, vec(0, 1, 0), 6, kb.Filter{IDs: []string{id(4), id(5)}})
		got := ids(hits)
		slices.Sort(got)
		want := []string{id(4), id(5)}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("id filter: %v", got)
		}
	})

	t.Run("UpsertReplaces", func(t *testing.T) {
		x := load(t)
		c := corpus()[5]
		c.Vector = vec(0, 1, 0.01)
		if err := x.Upsert(ctx, []kb.Chunk{c}); err != nil {
			t.Fatal(err)
		}
		hits := mustSearch(t, x, vec(0, 1, 0), 6, kb.Filter{})
		if len(hits) != 6 {
			t.Fatalf("an upsert of an existing id must replace it: %d hits", len(hits))
		}
		if hits[1].ID != id(5) {
			t.Errorf("the replaced vector should now rank second: %v", ids(hits))
		}
	})

	t.Run("DeleteByFile", func(t *testing.T) {
		x := load(t)
		if err := x.Delete(ctx, kb.Filter{Files: []string{"a.txt"}}); err != nil {
			t.Fatal(err)
		}
		hits := mustSearch(t, x, vec(0, 1, 0), 6, kb.Filter{})
		for _, h := range hits {
			if h.ID == id(0) || h.ID == id(1) || h.ID == id(2) {
				t.Fatalf("a deleted chunk was found: %v", ids(hits))
			}
		}
		if len(hits) != 3 {
			t.Errorf("b.txt's three chunks should remain: %v", ids(hits))
		}
	})

	t.Run("DeleteByIDs", func(t *testing.T) {
		x := load(t)
		if err := x.Delete(ctx, kb.Filter{IDs: []string{id(0)}}); err != nil {
			t.Fatal(err)
		}
		hits := mustSearch(t, x, vec(0, 1, 0), 1, kb.Filter{})
		if len(hits) != 1 || hits[0].ID != id(1) {
			t.Fatalf("after deleting the best match the next one leads: %v", ids(hits))
		}
	})

	t.Run("DeleteAll", func(t *testing.T) {
		x := load(t)
		if err := x.Delete(ctx, kb.Filter{}); err != nil {
			t.Fatal(err)
		}
		hits, err := x.Search(ctx, vec(0, 1, 0), 6, kb.Filter{})
		if err != nil || len(hits) != 0 {
			t.Fatalf("after deleting everything: %v, %v", ids(hits), err)
		}
		// Usable again afterwards.
		if err := x.Upsert(ctx, corpus()[:1]); err != nil {
			t.Fatal(err)
		}
		hits, err = x.Search(ctx, vec(0, 1, 0), 6, kb.Filter{})
		if err != nil || len(hits) != 1 {
			t.Fatalf("after re-adding one chunk: %v, %v", ids(hits), err)
		}
	})

	t.Run("WrongDimension", func(t *testing.T) {
		x := load(t)
		c := corpus()[0]
		c.ID = id(99)
		c.Vector = []float32{1, 0}
		if err := x.Upsert(ctx, []kb.Chunk{c}); err == nil {
			t.Fatal("a vector of another dimension must be refused")
		}
	})
}
