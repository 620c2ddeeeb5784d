package retrieve

import "sort"

// Hit is one search result. Lists of hits are best first.
type Hit struct {
	ID    string
	Score float64
}

// better reports whether a ranks before b: higher score, then smaller ID.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return lessID(a.ID, b.ID)
}

// lessID is a < b. Ties of score are common (chunks that say the same
// thing), and the ids compared then (hashes, UUIDs) mostly differ in their
// first bytes: compared here, those cost no call to the runtime's string
// comparison.
func lessID(a, b string) bool {
	for i := range min(len(a), len(b), 4) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return a < b
}

// sortHits sorts hits best first.
func sortHits(h []Hit) {
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
}

// idKey is the first eight bytes of id, big-endian, zero-padded: ids whose
// keys differ are in the order of their keys; equal keys say nothing.
// Kept beside the ids an index scans, it lets ties of score be broken
// without reading the ids themselves, a cache miss each: a base of chunks
// that say the same thing ties for most of its documents.
func idKey(id string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(id) {
			k |= uint64(id[i])
		}
	}
	return k
}

// betterKeyed is better for hits with their idKeys.
func betterKeyed(a Hit, ka uint64, b Hit, kb uint64) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if ka != kb {
		return ka < kb
	}
	return a.ID < b.ID
}

// topK keeps the k best hits pushed into it: a min-heap whose root is the
// worst hit kept, each with its idKey.
type topK struct {
	k    int
	h    []Hit
	keys []uint64
}

func newTopK(k int) *topK {
	c := k
	if c > 1024 {
		c = 1024
	}
	return &topK{k: k, h: make([]Hit, 0, c), keys: make([]uint64, 0, c)}
}

// full reports whether k hits are kept.
func (t *topK) full() bool { return len(t.h) >= t.k }

// worst returns the lowest score kept; meaningful only when full.
func (t *topK) worst() float64 { return t.h[0].Score }

// push offers a hit.
func (t *topK) push(x Hit) { t.pushKey(x, idKey(x.ID)) }

// pushKey offers a hit whose idKey is key.
func (t *topK) pushKey(x Hit, key uint64) {
	if t.k <= 0 {
		return
	}
	if len(t.h) < t.k {
		t.h = append(t.h, x)
		t.keys = append(t.keys, key)
		t.up(len(t.h) - 1)
		return
	}
	if !betterKeyed(x, key, t.h[0], t.keys[0]) {
		return
	}
	t.h[0], t.keys[0] = x, key
	t.down(0)
}

// better reports whether kept hit i ranks before kept hit j.
func (t *topK) better(i, j int) bool { return betterKeyed(t.h[i], t.keys[i], t.h[j], t.keys[j]) }

func (t *topK) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.keys[i], t.keys[j] = t.keys[j], t.keys[i]
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.better(p, i) { // parent is not better: heap order holds when parent is worse
			break
		}
		t.swap(p, i)
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.better(l, r) {
			m = r // r is worse
		}
		if !t.better(i, m) {
			return
		}
		t.swap(i, m)
		i = m
	}
}

// sorted returns the kept hits best first; t is spent.
func (t *topK) sorted() []Hit {
	sort.Sort(t)
	return append([]Hit(nil), t.h...)
}

// Len, Less and Swap sort the kept hits best first (sorted), which
// undoes the heap.
func (t *topK) Len() int           { return len(t.h) }
func (t *topK) Less(i, j int) bool { return t.better(i, j) }
func (t *topK) Swap(i, j int)      { t.swap(i, j) }
