package retrieve

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

func TestInt8VectorsDot(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	unit := func(dim int, sparse bool) []float32 {
		v := make([]float32, dim)
		for i := range v {
			if !sparse || rng.Intn(8) == 0 {
				v[i] = float32(rng.NormFloat64())
			}
		}
		Normalize(v)
		return v
	}
	for _, tc := range []struct {
		dim    int
		sparse bool
	}{{1, false}, {31, false}, {32, false}, {33, true}, {100, false}, {512, false}, {512, true}, {1536, false}, {3072, true}} {
		t.Run(fmt.Sprint(tc.dim, "/", tc.sparse), func(t *testing.T) {
			s := NewInt8Vectors(tc.dim)
			const n = 20
			s.Grow(n)
			vs := make([][]float32, n)
			for i := range vs {
				vs[i] = unit(tc.dim, tc.sparse)
				s.Set(i, vs[i])
			}
			for range 5 {
				qv := unit(tc.dim, tc.sparse)
				q := NewInt16Query(qv)
				for i, v := range vs {
					want := float64(0)
					for j := range v {
						want += float64(v[j]) * float64(qv[j])
					}
					// Each component is off by half a step at most.
					bound := float64(s.scales[i])/2*math.Sqrt(float64(tc.dim)) + 1e-4
					if got := s.Dot(i, q); math.Abs(got-want) > bound {
						t.Errorf("vector %d: Dot = %.5f, want %.5f", i, got, want)
					}
					if a, b := dotInt8(q.comps, s.comps[i*tc.dim:(i+1)*tc.dim]), dotInt8Go(q.comps, s.comps[i*tc.dim:(i+1)*tc.dim]); a != b {
						t.Errorf("vector %d: dotInt8 = %d, in Go %d", i, a, b)
					}
				}
			}
		})
	}
}

// TestInt8VectorsExtremes checks the sums that come nearest an int32's
// bounds (every component at its largest, of either sign) and vectors
// with nothing to scale.
func TestInt8VectorsExtremes(t *testing.T) {
	for _, dim := range []int{32, 512, 1536, 4096} {
		for _, sign := range []float32{1, -1} {
			v, w := make([]float32, dim), make([]float32, dim)
			for i := range v {
				v[i], w[i] = 1, sign
			}
			s := NewInt8Vectors(dim)
			s.Grow(1)
			s.Set(0, v)
			if got, want := s.Dot(0, NewInt16Query(w)), float64(sign)*float64(dim); math.Abs(got-want) > 1e-3*float64(dim) {
				t.Errorf("dim %d: Dot = %g, want %g", dim, got, want)
			}
		}
	}
	s := NewInt8Vectors(4)
	s.Grow(2)
	s.Set(1, []float32{0, 0, 0, 0})
	q := NewInt16Query([]float32{1, 0, 0, 0})
	for i := range 2 {
		if got := s.Dot(i, q); got != 0 {
			t.Errorf("zero vector %d: Dot = %g", i, got)
		}
	}
	s.Set(0, []float32{1, 0, 0, 0})
	if got := s.Dot(0, NewInt16Query(make([]float32, 4))); got != 0 {
		t.Errorf("zero query: Dot = %g", got)
	}
}

func BenchmarkInt8Dot(b *testing.B) {
	const dim, n = 512, 1024
	rng := rand.New(rand.NewSource(1))
	s := NewInt8Vectors(dim)
	s.Grow(n)
	v := make([]float32, dim)
	for i := range n {
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		s.Set(i, v)
	}
	q := NewInt16Query(v)
	b.ResetTimer()
	sum := 0.0
	for b.Loop() {
		for i := range n {
			sum += s.Dot(i, q)
		}
	}
	_ = sum
}

// FuzzDotInt8: the int8 inner product (the assembly where the CPU has
// it, with a tail in Go) gives the sum in Go, for any components and any
// length.
func FuzzDotInt8(f *testing.F) {
	f.Add([]byte{1, 2, 3}, int16(7))
	f.Add(make([]byte, 64), int16(-32768))
	f.Add([]byte("\x80\x7f\x80\x7f"), int16(32767))
	f.Fuzz(func(t *testing.T, data []byte, seed int16) {
		n := min(len(data), 4096)
		v := make([]int8, n)
		q := make([]int16, n)
		// Components that keep the sum in an int32 (see NewInt16Query).
		top := int32(math.MaxInt16)
		if n > 0 {
			top = min(top, math.MaxInt32/(127*int32(n)))
		}
		x := int32(seed)
		for i := range n {
			v[i] = int8(data[i])
			if v[i] == -128 {
				v[i] = -127 // encodeInt8 never writes −128
			}
			x = x*1103515245 + 12345
			q[i] = int16(int32((uint32(x)>>8)%uint32(2*top+1)) - top)
		}
		want := dotInt8Go(q, v)
		if got := dotInt8(q, v); got != want {
			t.Fatalf("dotInt8 = %d, in Go %d", got, want)
		}
	})
}
