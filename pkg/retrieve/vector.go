package retrieve

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/viterin/vek/vek32"
)

// VectorIndex is what Flat and HNSW have in common: cosine search over
// vectors stored under string ids. Search returns at most k hits, best
// first, with Score the cosine similarity in [-1,1]; allow, when not nil,
// filters hits by id.
type VectorIndex interface {
	Add(id string, v []float32) error
	Remove(id string)
	Search(q []float32, k int, allow func(id string) bool) []Hit
	Len() int
}

var (
	_ VectorIndex = (*Flat)(nil)
	_ VectorIndex = (*HNSW)(nil)
)

// Normalize scales v to unit length in place; a zero vector stays zero.
func Normalize(v []float32) {
	if len(v) == 0 {
		return
	}
	n := vek32.Norm(v)
	if n == 0 || math.IsNaN(float64(n)) || n == 1 {
		return
	}
	vek32.MulNumber_Inplace(v, 1/n)
}

// normalized returns a unit-length copy of v.
func normalized(v []float32) []float32 {
	c := append([]float32(nil), v...)
	Normalize(c)
	return c
}

// dot is the inner product of two vectors of equal, non-zero length (AVX2
// when the CPU has it).
func dot(a, b []float32) float32 { return vek32.Dot(a, b) }

// Flat is exact cosine search: every query is compared with every vector
// (SIMD dot products, split over the available cores for large sets).
// Vectors are stored normalised.
type Flat struct {
	mu   sync.RWMutex
	dim  int
	ids  []string
	vecs []float32 // len(ids)·dim
	slot map[string]int
}

// NewFlat returns an empty exact index for vectors of dimension dim.
func NewFlat(dim int) *Flat {
	return &Flat{dim: dim, slot: make(map[string]int)}
}

// Dim returns the vector dimension.
func (f *Flat) Dim() int { return f.dim }

// Len returns the number of vectors.
func (f *Flat) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.ids)
}

// Add stores v (normalised) under id, replacing the vector stored under id.
// It fails when v does not have the index's dimension or id is empty.
func (f *Flat) Add(id string, v []float32) error {
	if len(v) != f.dim {
		return fmt.Errorf("flat add %q: dimension %d, want %d", id, len(v), f.dim)
	}
	if id == "" {
		return fmt.Errorf("flat add: empty id")
	}
	u := normalized(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.slot[id]; ok {
		copy(f.vecs[s*f.dim:(s+1)*f.dim], u)
		return nil
	}
	f.slot[id] = len(f.ids)
	f.ids = append(f.ids, id)
	f.vecs = append(f.vecs, u...)
	return nil
}

// Remove deletes the vector stored under id, if any.
func (f *Flat) Remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.slot[id]
	if !ok {
		return
	}
	delete(f.slot, id)
	last := len(f.ids) - 1
	if s != last {
		f.ids[s] = f.ids[last]
		f.slot[f.ids[s]] = s
		copy(f.vecs[s*f.dim:(s+1)*f.dim], f.vecs[last*f.dim:])
	}
	f.ids = f.ids[:last]
	f.vecs = f.vecs[:last*f.dim]
}

// flatParallelMin is the size from which Flat splits a search over cores.
const flatParallelMin = 16384

// Search returns the k vectors most similar to q (exact cosine), best
// first. A query of the wrong dimension matches nothing.
func (f *Flat) Search(q []float32, k int, allow func(id string) bool) []Hit {
	if k <= 0 || len(q) != f.dim || f.dim == 0 {
		return nil
	}
	u := normalized(q)
	f.mu.RLock()
	defer f.mu.RUnlock()
	return scanParallel(len(f.ids), func(from, to int) *topK { return f.scan(u, k, allow, from, to) })
}

// scanParallel runs scan over n slots, split over the cores from
// flatParallelMin slots on, and merges the parts' best hits, best first.
// Flat.Search and HNSW's exact search share it.
func scanParallel(n int, scan func(from, to int) *topK) []Hit {
	parts := 1
	if n >= flatParallelMin {
		parts = min(runtime.GOMAXPROCS(0), n/(flatParallelMin/2))
	}
	if parts <= 1 {
		return scan(0, n).sorted()
	}
	tops := make([]*topK, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			tops[p] = scan(n*p/parts, n*(p+1)/parts)
		})
	}
	wg.Wait()
	for _, t := range tops[1:] {
		for i, h := range t.h {
			tops[0].pushKey(h, t.keys[i])
		}
	}
	return tops[0].sorted()
}

func (f *Flat) scan(u []float32, k int, allow func(string) bool, from, to int) *topK {
	top := newTopK(k)
	d := f.dim
	for s := from; s < to; s++ {
		x := float64(dot(u, f.vecs[s*d:(s+1)*d]))
		if top.full() && x < top.worst() {
			continue
		}
		if allow != nil && !allow(f.ids[s]) {
			continue
		}
		top.push(Hit{ID: f.ids[s], Score: x})
	}
	return top
}
