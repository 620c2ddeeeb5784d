package retrieve

// This file holds the HNSW search's candidate queues and visit marks.

import "slices"

// cand is a node and its distance (1 − cosine) to the query.
type cand struct {
	d  float32
	id uint32
}

func cmpCand(a, b cand) int {
	switch {
	case a.d < b.d:
		return -1
	case a.d > b.d:
		return 1
	}
	return int(a.id) - int(b.id)
}

// minHeap and maxHeap are the search's candidate queues, written out
// instead of container/heap or a heap with a comparison function: they run
// in the innermost loop of every graph search. maxHeap is a minHeap over
// negated distances, which orders exactly as a max-heap would.

// minHeap pops the nearest candidate first.
type minHeap struct{ h []cand }

func (m *minHeap) len() int { return len(m.h) }

func (m *minHeap) push(c cand) {
	m.h = append(m.h, c)
	i := len(m.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if m.h[p].d <= m.h[i].d {
			break
		}
		m.h[p], m.h[i] = m.h[i], m.h[p]
		i = p
	}
}

func (m *minHeap) pop() cand {
	top := m.h[0]
	last := len(m.h) - 1
	m.h[0] = m.h[last]
	m.h = m.h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		s := l
		if r := l + 1; r < last && m.h[r].d < m.h[l].d {
			s = r
		}
		if m.h[i].d <= m.h[s].d {
			break
		}
		m.h[i], m.h[s] = m.h[s], m.h[i]
		i = s
	}
	return top
}

// maxHeap keeps the farthest candidate on top.
type maxHeap struct{ neg minHeap }

func neg(c cand) cand { return cand{d: -c.d, id: c.id} }

func (m *maxHeap) len() int    { return m.neg.len() }
func (m *maxHeap) top() cand   { return neg(m.neg.h[0]) }
func (m *maxHeap) push(c cand) { m.neg.push(neg(c)) }
func (m *maxHeap) pop() cand   { return neg(m.neg.pop()) }

// sortedAsc returns the heap's candidates nearest first.
func (m *maxHeap) sortedAsc() []cand {
	out := make([]cand, len(m.neg.h))
	for i, c := range m.neg.h {
		out[i] = neg(c)
	}
	slices.SortFunc(out, cmpCand)
	return out
}

// visitSet marks visited nodes with a generation counter, so resetting it is
// O(1). It also carries a search's reusable scratch (the candidate queues,
// a link buffer, the neighbour selections), pooled with it, so a graph
// search or an insertion allocates next to nothing.
type visitSet struct {
	marks []uint32
	gen   uint32

	cands minHeap
	res   maxHeap
	buf   []uint32
	cs    []cand   // connect's candidates
	sel   []cand   // insert's selection
	sel2  []cand   // connect's selection
	todo  []uint32 // searchLayer's unvisited neighbours of a node
	sink  float32  // touch's sums
}

func (h *HNSW) getVisited() *visitSet {
	vs, _ := h.visited.Get().(*visitSet)
	if vs == nil {
		vs = &visitSet{}
	}
	return vs
}

func (v *visitSet) reset(n int) {
	if len(v.marks) < n {
		v.marks = make([]uint32, n+n/4)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
}

// visit marks n and reports whether it was marked already.
func (v *visitSet) visit(n uint32) bool {
	if v.marks[n] == v.gen {
		return true
	}
	v.marks[n] = v.gen
	return false
}
