package retrieve

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

func TestRRF(t *testing.T) {
	a := []Hit{{"x", 9}, {"y", 5}, {"z", 1}}
	b := []Hit{{"y", 0.9}, {"w", 0.8}, {"y", 0.1}} // y twice: its best rank counts
	got := RRF(0, a, b)
	want := map[string]float64{"y": 1.0/62 + 1.0/61, "x": 1.0 / 61, "w": 1.0 / 62, "z": 1.0 / 63}
	order := []string{"y", "x", "w", "z"}
	if len(got) != len(order) {
		t.Fatalf("RRF = %v", got)
	}
	for i, h := range got {
		if h.ID != order[i] || math.Abs(h.Score-want[h.ID]) > 1e-12 {
			t.Errorf("RRF[%d] = %v, want %s %v", i, h, order[i], want[order[i]])
		}
	}
	if got := RRF(1, nil, nil); len(got) != 0 {
		t.Errorf("RRF of nothing = %v", got)
	}
}

func TestHybrid(t *testing.T) {
	lex := []Hit{{"a", 8}, {"b", 4}, {"c", 2}}
	vec := []Hit{{"b", 0.9}, {"d", 0.5}, {"e", -0.3}}
	tests := []struct {
		name string
		p    HybridParams
		want []Hit
	}{
		// Complete lists: what a list misses scores 0 there.
		{"relative lexical, equal weights", HybridParams{}, []Hit{
			{"b", 0.5*0.9 + 0.5*0.5}, {"a", 0.5}, {"d", 0.25}, {"c", 0.125}, {"e", 0}}},
		// Lists cut at 3: lexical relevances a 1, b 0.5, c 0.25 (last: 0.25
		// for the absent); vector relevances b 0.9, d 0.5, e 0 (last: 0).
		{"relative lexical, cut lists", HybridParams{Depth: 3}, []Hit{
			{"b", 0.5*0.9 + 0.5*0.5}, {"a", 0.5}, {"d", 0.5*0.25 + 0.5*0.5}, {"c", 0.125}, {"e", 0.125}}},
		// A list shorter than Depth is complete.
		{"relative lexical, complete lists", HybridParams{Depth: 4}, []Hit{
			{"b", 0.5*0.9 + 0.5*0.5}, {"a", 0.5}, {"d", 0.25}, {"c", 0.125}, {"e", 0}}},
		// Lexical relevances a 0.5, b 0.25, c 0.125.
		{"absolute lexical", HybridParams{VectorWeight: 0.2, LexicalMax: 16}, []Hit{
			{"a", 0.8 * 0.5}, {"b", 0.2*0.9 + 0.8*0.25}, {"c", 0.1}, {"d", 0.1}, {"e", 0}}}, // c and d tie: by id
		{"vector only", HybridParams{VectorWeight: 1}, []Hit{
			{"b", 0.9}, {"d", 0.5}, {"a", 0}, {"c", 0}, {"e", 0}}},
	}
	for _, tt := range tests {
		got := Hybrid(lex, vec, tt.p)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: %v", tt.name, got)
		}
		for i := range got {
			if got[i].ID != tt.want[i].ID || math.Abs(got[i].Score-tt.want[i].Score) > 1e-12 {
				t.Errorf("%s: [%d] = %v, want %v", tt.name, i, got[i], tt.want[i])
			}
		}
	}
}

func TestHybridProperties(t *testing.T) {
	lex := []Hit{{"a", 30}, {"b", 12}, {"c", 0.5}, {"d", 0.1}}
	vec := []Hit{{"c", 1}, {"a", 0.7}, {"x", 0.2}, {"y", -1}}
	for _, p := range []HybridParams{{}, {VectorWeight: 0.15, LexicalMax: 20}, {Depth: 4, LexicalMax: 10}, {RRFK: 60}, {RRFK: 1, VectorWeight: 0.9}, {VectorWeight: 5}} {
		got := Hybrid(lex, vec, p)
		if len(got) != 6 {
			t.Fatalf("%+v: %d hits, want the union (6)", p, len(got))
		}
		for i, h := range got {
			if h.Score < 0 || h.Score > 1 || math.IsNaN(h.Score) {
				t.Errorf("%+v: score %v outside [0,1]", p, h)
			}
			if i > 0 && better(h, got[i-1]) {
				t.Errorf("%+v: not best first at %d: %v", p, i, got)
			}
		}
		// First in both lists is the best fused hit; adding evidence never
		// lowers a document.
		if got := Hybrid([]Hit{{"a", 3}, {"b", 1}}, []Hit{{"a", 0.9}, {"b", 0.8}}, p); got[0].ID != "a" {
			t.Errorf("%+v: %v", p, got)
		}
	}
	if got := Hybrid([]Hit{{"a", 2}}, []Hit{{"a", 1}}, HybridParams{RRFK: 60}); math.Abs(got[0].Score-1) > 1e-12 {
		t.Errorf("RRF hybrid maximum = %v, want 1", got[0].Score)
	}
	if got := Hybrid(nil, nil, HybridParams{}); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestScoreMappings(t *testing.T) {
	for _, tt := range []struct{ cos, rel float64 }{{1, 1}, {0.42, 0.42}, {0, 0}, {-0.5, 0}, {1.0000001, 1}, {math.NaN(), 0}} {
		if got := CosineToRelevance(tt.cos); math.Abs(got-tt.rel) > 1e-12 {
			t.Errorf("CosineToRelevance(%v) = %v, want %v", tt.cos, got, tt.rel)
		}
	}
	for _, c := range []float64{1, 0.5, 0, -0.5, -1} {
		d := CosineToDistance(c)
		if d < 0 || d > 2 {
			t.Errorf("CosineToDistance(%v) = %v outside [0,2]", c, d)
		}
		if back := DistanceToCosine(d); math.Abs(back-c) > 1e-12 {
			t.Errorf("round trip %v → %v → %v", c, d, back)
		}
	}
	if d := CosineToDistance(0); math.Abs(d-math.Sqrt2) > 1e-12 {
		t.Errorf("orthogonal unit vectors are √2 apart, got %v", d)
	}
}

// TestHybridMatchesReference checks Hybrid against the plain fusion it
// replaces (a map for each list and one for the sums), on lists with
// repeated ids, tied scores, documents in one list or both, every mode.
func TestHybridMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	list := func(n, ids int) []Hit {
		var out []Hit
		for range n {
			out = append(out, Hit{ID: fmt.Sprintf("d%02d", rng.Intn(ids)), Score: float64(rng.Intn(5)) / 4 * rng.Float64()})
		}
		sortHits(out)
		return out
	}
	params := []HybridParams{{}, {VectorWeight: 0.3}, {VectorWeight: 0.7, LexicalMax: 2}, {Depth: 5}, {Depth: 40, LexicalMax: 0.5}, {RRFK: 60}, {RRFK: 1, VectorWeight: 0.9}}
	for i := range 300 {
		lex, vec := list(rng.Intn(12), 20), list(rng.Intn(12), 20)
		for j := range vec {
			vec[j].Score = 2*vec[j].Score - 1 // cosines
		}
		for _, p := range params {
			got, want := Hybrid(lex, vec, p), hybridReference(lex, vec, p)
			if !slices.Equal(got, want) {
				t.Fatalf("case %d, %+v:\nlexical %v\nvector %v\ngot  %v\nwant %v", i, p, lex, vec, got, want)
			}
		}
	}
}

// hybridReference is Hybrid as it was first written.
func hybridReference(lexical, vector []Hit, p HybridParams) []Hit {
	w := p.VectorWeight
	if w <= 0 {
		w = 0.5
	}
	if w > 1 {
		w = 1
	}
	score := make(map[string]float64, len(lexical)+len(vector))
	if p.RRFK > 0 {
		k := float64(p.RRFK)
		for r, h := range dedupeReference(lexical) {
			score[h.ID] += (1 - w) / (k + float64(r) + 1)
		}
		for r, h := range dedupeReference(vector) {
			score[h.ID] += w / (k + float64(r) + 1)
		}
		for id := range score {
			score[id] *= k + 1 // the maximum is 1/(k+1)
		}
	} else {
		norm := p.LexicalMax
		if norm <= 0 {
			for _, h := range lexical {
				norm = math.Max(norm, h.Score)
			}
		}
		lex := make(map[string]float64, len(lexical))
		for _, h := range dedupeReference(lexical) {
			if norm > 0 && h.Score > 0 {
				lex[h.ID] = math.Min(h.Score/norm, 1)
			} else {
				lex[h.ID] = 0
			}
		}
		vec := make(map[string]float64, len(vector))
		for _, h := range dedupeReference(vector) {
			vec[h.ID] = CosineToRelevance(h.Score)
		}
		// A document missing from a list that was cut at p.Depth ranked
		// below its last entry: it is credited that entry's relevance, an
		// upper bound, so the cut does not punish what it cut. A shorter
		// list is complete, and what it misses scores 0.
		var minLex, minVec float64
		if p.Depth > 0 && len(lex) >= p.Depth {
			minLex = listMinReference(lex)
		}
		if p.Depth > 0 && len(vec) >= p.Depth {
			minVec = listMinReference(vec)
		}
		for id, r := range lex {
			v, ok := vec[id]
			if !ok {
				v = minVec
			}
			score[id] = (1-w)*r + w*v
		}
		for id, v := range vec {
			if _, ok := lex[id]; !ok {
				score[id] = (1-w)*minLex + w*v
			}
		}
	}
	out := make([]Hit, 0, len(score))
	for id, s := range score {
		out = append(out, Hit{ID: id, Score: math.Min(math.Max(s, 0), 1)})
	}
	sortHits(out)
	return out
}

func listMinReference(m map[string]float64) float64 {
	first := true
	var lo float64
	for _, x := range m {
		if first || x < lo {
			lo, first = x, false
		}
	}
	return lo
}

func dedupeReference(l []Hit) []Hit {
	seen := make(map[string]bool, len(l))
	out := l[:0:0]
	for _, h := range l {
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out
}
