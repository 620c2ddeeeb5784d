package memory

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/viterin/vek/vek32"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// TestFMA32: fma32 rounds a·b + c once, as big.Float's exact sum rounded
// to the nearest float32 does, including sums halfway between two float32
// values in float64.
func TestFMA32(t *testing.T) {
	exact := func(a, b, c float32) float32 {
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
		f, _ := x.Float32()
		return f
	}
	rng := rand.New(rand.NewPCG(3, 4))
	type abc struct{ a, b, c float32 }
	cases := []abc{
		{1, 1, 0x1p-24},                     // 1 + 2⁻²⁴: halfway in float64, exact
		{1 + 0x1p-23, 1, 0x1p-24},           // halfway, ties to even
		{1 + 0x1p-23, 1 - 0x1p-24, 0x1p-24}, // halfway in float64 only
		{0x1p-70, 0x1p-70, 0},               // below float32
		{0, 5, -3},
		{-1, 1, 1},
	}
	for range 200000 {
		a := float32(rng.NormFloat64())
		b := float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(60)-30))
		c := float32(rng.NormFloat64()) * float32(math.Ldexp(1, rng.IntN(60)-30))
		cases = append(cases, abc{a, b, c})
		// c so that a·b + c is near halfway between two float32 values.
		p := float64(a) * float64(b)
		cases = append(cases, abc{a, b, -float32(p) + float32(math.Ldexp(float64(float32(p)), -24))})
	}
	for _, k := range cases {
		if got, want := fma32(k.a, k.b, k.c), exact(k.a, k.b, k.c); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", k.a, k.b, k.c, got, want)
		}
	}
}

// TestSparseVectors: the offline embedder's vectors are stored sparse, and
// their dot products are vek32.Dot's to the bit (on a machine where vek
// uses its AVX2 kernel; elsewhere every vector is stored dense).
func TestSparseVectors(t *testing.T) {
	if !sparseDotExact() {
		t.Skip("vek32.Dot does not use the AVX2 kernel here: vectors are stored dense")
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
			sortScored(s, make([]scored, n))
			if !slices.Equal(s, want) {
				t.Fatalf("n=%d: got %v, want %v", n, s, want)
			}
		}
	}
}
