package retrieve

import (
	"math"
	"math/rand"
	"sort"
	"strconv"
	"testing"
)

func TestNormalize(t *testing.T) {
	v := []float32{3, 4}
	Normalize(v)
	if math.Abs(float64(v[0])-0.6) > 1e-6 || math.Abs(float64(v[1])-0.8) > 1e-6 {
		t.Errorf("Normalize(3,4) = %v", v)
	}
	z := []float32{0, 0}
	Normalize(z)
	if z[0] != 0 || z[1] != 0 {
		t.Errorf("zero vector became %v", z)
	}
	Normalize(nil)
}

// bruteForce is the reference: cosine with every vector, sorted.
func bruteForce(vecs map[string][]float32, q []float32, k int) []Hit {
	var out []Hit
	for id, v := range vecs {
		var d, nq, nv float64
		for i := range v {
			d += float64(v[i]) * float64(q[i])
			nq += float64(q[i]) * float64(q[i])
			nv += float64(v[i]) * float64(v[i])
		}
		out = append(out, Hit{id, d / math.Sqrt(nq*nv)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out[:min(k, len(out))]
}

func TestFlatExact(t *testing.T) {
	for _, n := range []int{10, 500, flatParallelMin + 100} { // the last one searches on several goroutines
		rng := rand.New(rand.NewSource(int64(n)))
		f := NewFlat(16)
		vecs := map[string][]float32{}
		for i := 0; i < n; i++ {
			v := make([]float32, 16)
			for j := range v {
				v[j] = float32(rng.NormFloat64()) * 3 // not normalised: Add normalises
			}
			id := strconv.Itoa(i)
			vecs[id] = v
			if err := f.Add(id, v); err != nil {
				t.Fatal(err)
			}
		}
		for qi := 0; qi < 20; qi++ {
			q := vecs[strconv.Itoa(rng.Intn(n))]
			got := f.Search(q, 10, nil)
			want := bruteForce(vecs, q, 10)
			if len(got) != len(want) {
				t.Fatalf("n=%d: %d hits, want %d", n, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-5 {
					t.Fatalf("n=%d hit %d = %v, want %v", n, i, got[i], want[i])
				}
			}
			if got[0].Score < 0.9999 {
				t.Errorf("a stored vector is not its own best match: %v", got[0])
			}
		}
	}
}

func TestFlatUpdates(t *testing.T) {
	f := NewFlat(2)
	if err := f.Add("x", []float32{1, 2, 3}); err == nil {
		t.Error("wrong dimension accepted")
	}
	if err := f.Add("", []float32{1, 0}); err == nil {
		t.Error("empty id accepted")
	}
	f.Add("a", []float32{1, 0})
	f.Add("b", []float32{0, 1})
	f.Add("c", []float32{-1, 0})
	f.Add("a", []float32{0, -1}) // replace
	if f.Len() != 3 {
		t.Fatalf("Len = %d, want 3", f.Len())
	}
	if h := f.Search([]float32{0, -2}, 1, nil); h[0].ID != "a" || math.Abs(h[0].Score-1) > 1e-6 {
		t.Errorf("replaced vector not found: %v", h)
	}
	f.Remove("b")
	f.Remove("b")
	got := f.Search([]float32{0, 1}, 10, nil)
	if len(got) != 2 || got[0].ID == "b" || got[1].ID == "b" {
		t.Errorf("after remove: %v", got)
	}
	if got := f.Search([]float32{1, 0}, 10, func(id string) bool { return id == "a" }); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("allow: %v", got)
	}
	if got := f.Search([]float32{1}, 10, nil); got != nil {
		t.Errorf("wrong-dimension query: %v", got)
	}
}
