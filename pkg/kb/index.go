package kb

import (
	"context"
	"fmt"
	"sync"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// Chunk is one indexed piece of a document.
type Chunk struct {
	ID       string         `json:"id"`
	File     string         `json:"file"`
	Seq      int            `json:"seq"` // position in the file, from 0
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata,omitempty"`
	Vector   []float32      `json:"-"`
}

// Filter selects chunks. Every non-empty field must match: the chunk's id is
// one of IDs, its file one of Files, and each Metadata key equals the
// chunk's first-level metadata value (compared as JSON). The zero Filter
// matches every chunk.
type Filter struct {
	IDs      []string
	Files    []string
	Metadata map[string]any
}

// Empty reports whether f matches every chunk.
func (f Filter) Empty() bool { return len(f.IDs) == 0 && len(f.Files) == 0 && len(f.Metadata) == 0 }

// Hit is a search result: a chunk id and its score.
type Hit = retrieve.Hit

// Index stores chunk vectors with their file and metadata as payload.
//
// Upsert stores the chunks' vectors (replacing those of the same ids); every
// chunk has a Vector of the index's dimension, fixed by the first upsert.
// Search returns at most k hits, best first, whose Score is the relevance
// retrieve.CosineToRelevance(cosine) in [0,1], higher is closer, the same
// for every implementation. Delete removes the chunks f matches (all of them
// for the zero Filter). All honour ctx.
type Index interface {
	Upsert(ctx context.Context, chunks []Chunk) error
	Search(ctx context.Context, vec []float32, k int, f Filter) ([]Hit, error)
	Delete(ctx context.Context, f Filter) error
}

// store is an Index a knowledge base owns: it can be dropped with the KB and
// must be closed.
type store interface {
	Index
	// Drop deletes everything the index holds outside the KB's SQLite file
	// (a Qdrant collection, the embedded snapshot).
	Drop(ctx context.Context) error
	Close() error
}

// payload is what the embedded index keeps of a chunk besides its vector.
type payload struct {
	file string
	meta map[string]any
}

// MemIndex is the embedded Index: an in-memory HNSW graph (exact search
// while small) plus each chunk's file and metadata for filtering. A
// knowledge base rebuilds or reloads it from its SQLite file at open.
type MemIndex struct {
	mu   sync.RWMutex
	dim  int
	vecs *retrieve.HNSW
	pay  map[string]payload

	// link links staged vectors in the background (link.go); onLinked,
	// set before the index is shared, runs after each link.
	link     linker
	onLinked func()
}

// NewMemIndex returns an empty index; dim 0 takes the dimension of the first
// upsert.
func NewMemIndex(dim int) *MemIndex {
	m := &MemIndex{dim: dim, pay: map[string]payload{}}
	if dim > 0 {
		m.vecs = retrieve.NewHNSW(dim, memHNSW)
	}
	return m
}

// Len returns the number of stored vectors.
func (m *MemIndex) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.pay)
}

// Upsert implements Index.
func (m *MemIndex) Upsert(ctx context.Context, chunks []Chunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(chunks) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vecs == nil || (len(m.pay) == 0 && len(chunks[0].Vector) != m.dim) {
		// An empty index takes the dimension of its first vectors, so a
		// knowledge base emptied to be rebuilt with another embedder
		// holds the new vectors, whatever it held before.
		m.dim = len(chunks[0].Vector)
		if m.dim == 0 {
			return fmt.Errorf("upsert %s: chunk has no vector", chunks[0].ID)
		}
		m.vecs = retrieve.NewHNSW(m.dim, memHNSW)
	}
	ids := make([]string, len(chunks))
	vecs := make([][]float32, len(chunks))
	for i, c := range chunks {
		if len(c.Vector) != m.dim {
			return fmt.Errorf("upsert %s: vector dimension %d, index has %d", c.ID, len(c.Vector), m.dim)
		}
		if c.ID == "" {
			return fmt.Errorf("upsert: chunk without id")
		}
		ids[i], vecs[i] = c.ID, c.Vector
	}
	if err := m.vecs.AddBatch(ids, vecs); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	for _, c := range chunks {
		m.pay[c.ID] = payload{file: c.File, meta: c.Metadata}
	}
	return nil
}

// allow returns the id filter for f (nil for the zero Filter). The caller
// holds m.mu.
func (m *MemIndex) allow(f Filter) func(string) bool {
	if f.Empty() {
		return nil
	}
	c := compileFilter(f)
	return func(id string) bool {
		p, ok := m.pay[id]
		return ok && c.match(id, p.file, p.meta)
	}
}

// matches reports whether a chunk with id, file and metadata passes f.
func matches(f Filter, id, file string, meta map[string]any) bool {
	return compileFilter(f).match(id, file, meta)
}

// Search implements Index.
func (m *MemIndex) Search(ctx context.Context, vec []float32, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.vecs == nil || k <= 0 || len(m.pay) == 0 {
		return nil, nil
	}
	if len(vec) != m.dim {
		return nil, fmt.Errorf("search: query dimension %d, index has %d", len(vec), m.dim)
	}
	hits := m.vecs.Search(vec, k, m.allow(f))
	for i := range hits {
		hits[i].Score = retrieve.CosineToRelevance(hits[i].Score)
	}
	return hits, nil
}

// Delete implements Index.
func (m *MemIndex) Delete(ctx context.Context, f Filter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.Empty() {
		m.pay = map[string]payload{}
		if m.dim > 0 {
			m.vecs = retrieve.NewHNSW(m.dim, memHNSW)
		}
		return nil
	}
	c := compileFilter(f)
	remove := func(id string) {
		delete(m.pay, id)
		if m.vecs != nil {
			m.vecs.Remove(id)
		}
	}
	if len(f.IDs) > 0 && len(f.IDs) < len(m.pay) {
		// The chunks named, looked up rather than every chunk scanned:
		// an upload that replaces a document removes its old chunks.
		for id := range c.ids {
			if p, ok := m.pay[id]; ok && c.match(id, p.file, p.meta) {
				remove(id)
			}
		}
		return nil
	}
	for id, p := range m.pay {
		if c.match(id, p.file, p.meta) {
			remove(id)
		}
	}
	return nil
}

// Drop implements store: the embedded index has nothing outside memory
// (its snapshot belongs to the KB directory).
func (m *MemIndex) Drop(ctx context.Context) error { return m.Delete(ctx, Filter{}) }

// Close implements store.
func (m *MemIndex) Close() error { return nil }

// memHNSW are the embedded index's graph parameters: hnswlib's M and a
// cheaper construction than its efConstruction of 200, which made the graph
// build most of an upload's time. Search keeps its recall regardless: the
// index tunes its search list to recall@10 0.95 against exact search
// (retrieve.HNSW.Tune), so a sparser graph costs searches a longer list.
var memHNSW = retrieve.HNSWParams{EfConstruction: 40}
