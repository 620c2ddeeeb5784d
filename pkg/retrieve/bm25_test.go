package retrieve

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/text"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestBM25HandComputed checks the scores against values worked out by hand
// for three documents: d1 = a b c, d2 = a a d, d3 = b e, with K1 1.2, B 0.75.
// N = 3, avgdl = 8/3.
//
//	idf(a) = ln(1 + (3−2+0.5)/(2+0.5)) = ln 1.6
//	idf(e) = ln(1 + (3−1+0.5)/(1+0.5)) = ln(8/3)
//	norm(|d|=3) = 1.2·(0.25 + 0.75·3/(8/3)) = 1.3125
//	norm(|d|=2) = 1.2·(0.25 + 0.75·2/(8/3)) = 0.975
//	q = a:   d1 = ln1.6·1/(1+1.3125) = 0.203245, d2 = ln1.6·2/(2+1.3125) = 0.283776
//	q = a e: d3 = ln(8/3)·1/(1+0.975) = 0.496622
func TestBM25HandComputed(t *testing.T) {
	b := NewBM25(BM25Params{K1: 1.2, B: 0.75})
	b.Add("d1", []string{"a", "b", "c"})
	b.Add("d2", []string{"a", "a", "d"})
	b.Add("d3", []string{"b", "e"})
	tests := []struct {
		query []string
		want  []Hit
	}{
		{[]string{"a"}, []Hit{{"d2", math.Log(1.6) * 2 / 3.3125}, {"d1", math.Log(1.6) / 2.3125}}},
		{[]string{"a", "e"}, []Hit{{"d3", math.Log(8.0/3) / 1.975}, {"d2", math.Log(1.6) * 2 / 3.3125}, {"d1", math.Log(1.6) / 2.3125}}},
		{[]string{"a", "a"}, []Hit{{"d2", 2 * math.Log(1.6) * 2 / 3.3125}, {"d1", 2 * math.Log(1.6) / 2.3125}}}, // repeated query term counts twice
		{[]string{"zzz"}, nil},
		{nil, nil},
	}
	for _, tt := range tests {
		got := b.Search(tt.query, 10, nil)
		if len(got) != len(tt.want) {
			t.Fatalf("Search(%q) = %v, want %v", tt.query, got, tt.want)
		}
		for i := range got {
			if got[i].ID != tt.want[i].ID || !near(got[i].Score, tt.want[i].Score) {
				t.Errorf("Search(%q)[%d] = %v, want %v", tt.query, i, got[i], tt.want[i])
			}
		}
	}
	if got := b.Search([]string{"a"}, 10, nil)[0].Score; !near(got, 0.2837757) && math.Abs(got-0.2837757) > 1e-6 {
		t.Errorf("d2 score %v, want 0.283776 (hand computed)", got)
	}
	if m := b.MaxScore([]string{"a", "e"}); !near(m, math.Log(1.6)+math.Log(8.0/3)) {
		t.Errorf("MaxScore = %v, want ln1.6 + ln(8/3)", m)
	}
	if got := b.Search([]string{"a"}, 1, nil); len(got) != 1 || got[0].ID != "d2" {
		t.Errorf("k=1: %v", got)
	}
	if got := b.Search([]string{"a"}, 10, func(id string) bool { return id != "d2" }); len(got) != 1 || got[0].ID != "d1" {
		t.Errorf("allow filter: %v", got)
	}
	if b.Len() != 3 {
		t.Errorf("Len = %d", b.Len())
	}
}

func TestBM25Defaults(t *testing.T) {
	if p := NewBM25(BM25Params{}).Params(); p != (BM25Params{K1: 0.9, B: 0.4}) {
		t.Errorf("defaults %+v", p)
	}
	if p := NewBM25(BM25Params{K1: 1.2}).Params(); p != (BM25Params{K1: 1.2, B: 0}) {
		t.Errorf("explicit %+v", p)
	}
}

// randomDocs makes n documents over a small vocabulary, so terms repeat.
func randomDocs(rng *rand.Rand, n int) map[string][]string {
	docs := make(map[string][]string, n)
	for i := 0; i < n; i++ {
		l := 1 + rng.Intn(30)
		d := make([]string, l)
		for j := range d {
			d[j] = fmt.Sprintf("t%d", int(math.Abs(rng.NormFloat64()*40)))
		}
		docs[fmt.Sprintf("doc%d", i)] = d
	}
	return docs
}

func sameHits(t *testing.T, what string, got, want []Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d\n got %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
			t.Fatalf("%s: hit %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestBM25IncrementalEqualsFresh adds, replaces and removes documents in a
// random order (enough removals to trigger compaction) and compares every
// query with an index built from scratch from the surviving documents.
func TestBM25IncrementalEqualsFresh(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	docs := randomDocs(rng, 600)
	inc := NewBM25(BM25Params{})
	live := map[string][]string{}
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	adds := 0
	for step := 0; step < 3000; step++ {
		id := ids[rng.Intn(len(ids))]
		switch r := rng.Float64(); {
		case r < 0.5:
			inc.Add(id, docs[id])
			live[id] = docs[id]
			adds++
		case r < 0.6: // replace with other content
			other := docs[ids[rng.Intn(len(ids))]]
			inc.Add(id, other)
			live[id] = other
			adds++
		default:
			inc.Remove(id)
			delete(live, id)
		}
	}
	inc.Remove("never-added")
	if len(inc.docs) >= adds {
		t.Errorf("%d slots after %d adds: tombstones were never compacted", len(inc.docs), adds)
	}
	fresh := NewBM25(BM25Params{})
	for id, d := range live {
		fresh.Add(id, d)
	}
	if inc.Len() != len(live) || fresh.Len() != len(live) {
		t.Fatalf("Len: incremental %d, fresh %d, want %d", inc.Len(), fresh.Len(), len(live))
	}
	for q := 0; q < 50; q++ {
		query := []string{fmt.Sprintf("t%d", rng.Intn(60)), fmt.Sprintf("t%d", rng.Intn(60))}
		sameHits(t, fmt.Sprint("query ", query), inc.Search(query, 20, nil), fresh.Search(query, 20, nil))
	}
}

func TestBM25AddCounts(t *testing.T) {
	a, b := NewBM25(BM25Params{}), NewBM25(BM25Params{})
	terms := text.Terms("The cats sat on the mat with other cats; 猫坐在垫子上")
	a.Add("x", terms)
	a.Add("y", []string{"mat"})
	counts := map[string]int{}
	for _, t := range terms {
		counts[t]++
	}
	b.AddCounts("x", counts)
	b.AddCounts("y", map[string]int{"mat": 1, "ignored": 0})
	for _, q := range [][]string{{"cat"}, {"mat"}, {"垫子", "cat"}} {
		sameHits(t, fmt.Sprint(q), b.Search(q, 5, nil), a.Search(q, 5, nil))
	}
}

func TestBM25RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	b := NewBM25(BM25Params{K1: 1.1, B: 0.6})
	for id, d := range randomDocs(rng, 200) {
		b.Add(id, d)
	}
	for i := 0; i < 50; i++ {
		b.Remove(fmt.Sprintf("doc%d", i))
	}
	c, data := roundTrip(t, b, ReadBM25)
	if c.Params() != b.Params() || c.Len() != b.Len() {
		t.Fatalf("read params %+v len %d, want %+v %d", c.Params(), c.Len(), b.Params(), b.Len())
	}
	for _, q := range [][]string{{"t0"}, {"t1", "t5"}, {"t30", "t2", "t2"}} {
		sameHits(t, fmt.Sprint(q), c.Search(q, 30, nil), b.Search(q, 30, nil))
	}
	// The restored index keeps working incrementally.
	c.Add("new", []string{"t0", "t0"})
	if h := c.Search([]string{"t0"}, 200, nil); len(h) == 0 {
		t.Fatal("no hits after add")
	}
	// Corrupt input fails cleanly.
	for _, bad := range [][]byte{nil, []byte("not an index"), data[:len(data)/2]} {
		if _, err := ReadBM25(bytes.NewReader(bad)); err == nil {
			t.Errorf("ReadBM25(%d bytes) succeeded", len(bad))
		}
	}
	if _, err := ReadBM25(strings.NewReader("not an index at all...")); !errors.Is(err, ErrFormat) {
		t.Errorf("bad magic: %v, want ErrFormat", err)
	}
}

func TestBM25Concurrent(t *testing.T) {
	b := NewBM25(BM25Params{})
	docs := randomDocs(rand.New(rand.NewSource(1)), 300)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			i := 0
			for id, d := range docs {
				if i%4 == w {
					b.Add(id, d)
					b.Search(d[:1], 5, nil)
					if i%3 == 0 {
						b.Remove(id)
					}
				}
				i++
			}
		})
	}
	wg.Wait()
	if b.Len() == 0 || b.Len() >= len(docs) {
		t.Errorf("Len = %d", b.Len())
	}
}

func TestBM25EmptyID(t *testing.T) {
	b := NewBM25(BM25Params{})
	b.Add("", []string{"a"})
	if b.Len() != 0 {
		t.Errorf("empty id indexed")
	}
}

// TestBM25SearchClauses checks the BM25F scoring of Clauses: a clause of
// one plain form scores like Search, forms of one term add up to one
// pseudo frequency that saturates below Count·IDF, and a form of several
// terms occurs as often as the least frequent of them.
func TestBM25SearchClauses(t *testing.T) {
	b := NewBM25(BM25Params{K1: 1.2, B: 0.75})
	b.Add("d1", []string{"a", "b", "c"})
	b.Add("d2", []string{"a", "a", "d"})
	b.Add("d3", []string{"b", "e"})
	b.Add("gone", []string{"a", "b"})
	b.Remove("gone")

	// One plain form per term: the scores of Search, with its IDFs.
	idf := func(t string) float64 { return b.MaxScore([]string{t}) }
	plain := []Clause{
		{IDF: idf("a"), Forms: []Form{{Terms: []string{"a"}, Weight: 1}}},
		{IDF: idf("e"), Forms: []Form{{Terms: []string{"e"}, Weight: 1}}},
	}
	got, want := b.SearchClauses(plain, 10, nil), b.Search([]string{"a", "e"}, 10, nil)
	if len(got) != len(want) {
		t.Fatalf("clauses %v, Search %v", got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || !near(got[i].Score, want[i].Score) {
			t.Errorf("#%d: clauses %v, Search %v", i, got[i], want[i])
		}
	}

	// Two forms of one term in d1 (a once, b once, weight 2): ptf = 1 + 2.
	// norm(|d|=3) with avgdl 8/3 is 1.3125 (TestBM25HandComputed).
	c := Clause{Count: 2, IDF: 1.5, Forms: []Form{{Terms: []string{"a"}, Weight: 1}, {Terms: []string{"b"}, Weight: 2}}}
	hits := b.SearchClauses([]Clause{c}, 10, func(id string) bool { return id == "d1" })
	if len(hits) != 1 || !near(hits[0].Score, 2*1.5*3/(3+1.3125)) {
		t.Errorf("two forms in d1: %v, want %g", hits, 2*1.5*3/(3+1.3125))
	}
	for _, h := range b.SearchClauses([]Clause{c}, 10, nil) {
		if h.Score >= 2*1.5 {
			t.Errorf("%s scores %g, not below Count·IDF %g", h.ID, h.Score, 2*1.5)
		}
	}

	// A conjunction: a and b together are in d1 only (the removed document
	// holds them too); a and d in d2, where it counts min(2, 1) = 1.
	if hits := b.SearchClauses([]Clause{{IDF: 1, Forms: []Form{{Terms: []string{"a", "b"}, Weight: 1}}}}, 10, nil); len(hits) != 1 || hits[0].ID != "d1" {
		t.Errorf("a∧b: %v, want d1 only", hits)
	}
	norm2 := 1.2 * (0.25 + 0.75*3/(8.0/3))
	if hits := b.SearchClauses([]Clause{{IDF: 1, Forms: []Form{{Terms: []string{"d", "a"}, Weight: 1}}}}, 10, nil); len(hits) != 1 || hits[0].ID != "d2" || !near(hits[0].Score, 1/(1+norm2)) {
		t.Errorf("d∧a: %v, want d2 at %g", hits, 1/(1+norm2))
	}
	if hits := b.SearchClauses([]Clause{{IDF: 1, Forms: []Form{{Terms: []string{"a", "zzz"}, Weight: 1}}}}, 10, nil); len(hits) != 0 {
		t.Errorf("a∧zzz: %v, want none", hits)
	}
	// Clauses without weight match nothing.
	if hits := b.SearchClauses([]Clause{{IDF: 0, Forms: []Form{{Terms: []string{"a"}, Weight: 1}}}, {IDF: 1, Forms: []Form{{Terms: []string{"b"}}}}}, 10, nil); len(hits) != 0 {
		t.Errorf("weightless clauses: %v", hits)
	}
}

func TestBM25DocFreq(t *testing.T) {
	b := NewBM25(BM25Params{})
	b.Add("a", []string{"x", "y", "x"})
	b.Add("b", []string{"x"})
	b.Add("c", []string{"z"})
	b.Remove("c")
	for term, want := range map[string]int{"x": 2, "y": 1, "z": 0, "w": 0} {
		if got := b.DocFreq(term); got != want {
			t.Errorf("DocFreq(%q) = %d, want %d", term, got, want)
		}
	}
}

// searchClausesRef is SearchClauses as it was written first, with maps:
// the reference the slice-based one must match exactly.
func searchClausesRef(b *BM25, query []Clause, k int, allow func(id string) bool) []Hit {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if k <= 0 || len(query) == 0 || b.live == 0 {
		return nil
	}
	avgdl := float64(b.total) / float64(b.live)
	if avgdl == 0 {
		avgdl = 1
	}
	scores := map[int32]float64{}
	ptf := map[int32]float64{}
	for _, c := range query {
		w := float64(max(c.Count, 1)) * c.IDF
		if !(w > 0) {
			continue
		}
		clear(ptf)
		for _, f := range c.Forms {
			if f.Weight <= 0 || len(f.Terms) == 0 {
				continue
			}
			var tf map[int32]int32
			for j, t := range f.Terms {
				p := b.post[t]
				if p == nil {
					tf = nil
					break
				}
				next := map[int32]int32{}
				for i, s := range p.slots {
					if b.docs[s].id == "" {
						continue
					}
					if j == 0 {
						next[s] = p.tfs[i]
					} else if x, ok := tf[s]; ok {
						next[s] = min(x, p.tfs[i])
					}
				}
				tf = next
			}
			for s, x := range tf {
				ptf[s] += f.Weight * float64(x)
			}
		}
		for s, x := range ptf {
			norm := b.p.K1 * (1 - b.p.B + b.p.B*float64(b.docs[s].len)/avgdl)
			scores[s] += w * x / (x + norm)
		}
	}
	top := newTopK(k)
	for s, x := range scores {
		if allow == nil || allow(b.docs[s].id) {
			top.push(Hit{ID: b.docs[s].id, Score: x})
		}
	}
	return top.sorted()
}

// TestBM25SearchClausesRandom checks SearchClauses against the map-based
// reference on random indexes (with removed and replaced documents) and
// random clauses of one- and many-term forms, repeated terms included.
func TestBM25SearchClausesRandom(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	term := func() string { return "t" + fmt.Sprint(r.Intn(12)) }
	for round := range 200 {
		b := NewBM25(BM25Params{})
		n := 1 + r.Intn(120)
		for d := range n {
			terms := make([]string, 1+r.Intn(10))
			for i := range terms {
				terms[i] = term()
			}
			b.Add(fmt.Sprint("d", d), terms)
			if r.Intn(4) == 0 {
				b.Remove(fmt.Sprint("d", r.Intn(d+1)))
			}
		}
		for range 5 {
			var q []Clause
			for range 1 + r.Intn(4) {
				c := Clause{Count: r.Intn(3), IDF: r.Float64() * 2}
				for range 1 + r.Intn(3) {
					f := Form{Weight: float64(r.Intn(3))}
					for range 1 + r.Intn(3) {
						f.Terms = append(f.Terms, term())
					}
					c.Forms = append(c.Forms, f)
				}
				q = append(q, c)
			}
			k := 1 + r.Intn(15)
			var allow func(string) bool
			if r.Intn(3) == 0 {
				allow = func(id string) bool { return len(id)%2 == 0 }
			}
			got, want := b.SearchClauses(q, k, allow), searchClausesRef(b, q, k, allow)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d: query %+v k %d:\n got %v\nwant %v", round, q, k, got, want)
			}
		}
	}
}
