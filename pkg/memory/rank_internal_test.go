package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

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
