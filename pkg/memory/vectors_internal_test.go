package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/viterin/vek/vek32"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// TestSparseVectors: the offline embedder's vectors are stored sparse, and
// their dot products are vek32.Dot's to the bit, as are those of random
// sparse vectors.
func TestSparseVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{512, 100, 33, 31, 7} {
		for range 200 {
			u, v := make([]float32, dim), make([]float32, dim)
			for i := range dim {
				if rng.IntN(4) == 0 {
					u[i] = float32(rng.NormFloat64())
				}
				if rng.IntN(5) == 0 {
					v[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20))
				}
			}
			vs := newVectors(dim)
			vs.grow()
			vs.set(0, v)
			if got, want := vs.dot(vs.query(u), 0), vek32.Dot(u, v); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("dim %d: dot = %v, want %v", dim, got, want)
			}
		}
	}
	texts := []string{
		"What did I say about the hexagram Kun?", "Kun stands for earth, receptivity and devotion.", "Yes!",
		"I went camping with the kids last weekend at the lake and they loved it.", "我们上周去杭州看了西湖。", "",
	}
	for _, dim := range []int{512, 100, 20} {
		e := retrieve.NewHashEmbedder(dim)
		vecs, err := e.Embed(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		vs := newVectors(dim)
		for i, v := range vecs {
			retrieve.Normalize(v)
			vs.grow()
			vs.set(i, v)
		}
		if dim == 512 && vs.refs[0].bits < 0 {
			t.Errorf("dim %d: a hashed vector is stored dense", dim)
		}
		for _, u := range vecs {
			q := vs.query(u)
			for i, v := range vecs {
				if got, want := vs.dot(q, i), vek32.Dot(u, v); math.Float32bits(got) != math.Float32bits(want) {
					t.Errorf("dim %d: dot with %q = %v, want %v", dim, texts[i], got, want)
				}
			}
		}
	}
	// A dense vector stays dense.
	vs := newVectors(64)
	vs.grow()
	v := make([]float32, 64)
	for i := range v {
		v[i] = float32(i + 1)
	}
	retrieve.Normalize(v)
	vs.set(0, v)
	if vs.refs[0].bits >= 0 {
		t.Error("a dense vector is stored sparse")
	}
	if got, want := vs.dot(vs.query(v), 0), vek32.Dot(v, v); got != want {
		t.Errorf("dense dot = %v, want %v", got, want)
	}
}

// TestSortScored: the radix sort orders as best does, ties, zeros and
// negative scores included.
func TestSortScored(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 17, 300, 1000} {
		for range 20 {
			s := make([]scored, n)
			for i := range s {
				var v float64
				switch rng.IntN(6) {
				case 0:
					v = 0
				case 1:
					v = math.Copysign(0, -1)
				case 2:
					v = float64(rng.IntN(4)) / 4 // ties
				case 3:
					v = -rng.Float64()
				default:
					v = rng.Float64() * math.Ldexp(1, rng.IntN(20)-10)
				}
				s[n-1-i] = scored{v, int32(i)} // descending position
			}
			want := best(slices.Clone(s), n)
			sortScored(s, make([]scored, n), make([]uint64, n))
			if !slices.Equal(s, want) {
				t.Fatalf("n=%d: got %v, want %v", n, s, want)
			}
		}
	}
}
