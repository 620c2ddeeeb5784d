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

// topK keeps the k best hits pushed into it: a min-heap whose root is the
// worst hit kept.
type topK struct {
	k int
	h []Hit
}

func newTopK(k int) *topK {
	c := k
	if c > 1024 {
		c = 1024
	}
	return &topK{k: k, h: make([]Hit, 0, c)}
}

// full reports whether k hits are kept.
func (t *topK) full() bool { return len(t.h) >= t.k }

// worst returns the lowest score kept; meaningful only when full.
func (t *topK) worst() float64 { return t.h[0].Score }

// push offers a hit.
func (t *topK) push(x Hit) {
	if t.k <= 0 {
		return
	}
	if len(t.h) < t.k {
		t.h = append(t.h, x)
		t.up(len(t.h) - 1)
		return
	}
	if !better(x, t.h[0]) {
		return
	}
	t.h[0] = x
	t.down(0)
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(t.h[p], t.h[i]) { // parent is not better: heap order holds when parent is worse
			break
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
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
		if r := l + 1; r < n && better(t.h[l], t.h[r]) {
			m = r // r is worse
		}
		if !better(t.h[i], t.h[m]) {
			return
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the kept hits best first.
func (t *topK) sorted() []Hit {
	out := append([]Hit(nil), t.h...)
	sortHits(out)
	return out
}
