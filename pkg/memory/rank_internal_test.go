package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// randomScored returns n scores with ties, zeros and negative scores, in
// descending position as rank makes them.
func randomScored(rng *rand.Rand, n int) []scored {
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
		s[n-1-i] = scored{v, int32(i)}
	}
	return s
}

// TestSelectBest: the first k after selectBest are the k best, for every
// k, ties, zeros and negative scores included.
func TestSelectBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 17, 300, 1000} {
		for range 5 {
			s := randomScored(rng, n)
			want := slices.Clone(s)
			slices.SortFunc(want, better)
			for _, k := range []int{-1, 0, 1, 2, n / 3, n - 1, n, n + 1} {
				got := slices.Clone(s)
				selectBest(got, k)
				kk := min(max(k, 0), n)
				head := slices.Clone(got[:kk])
				slices.SortFunc(head, better)
				if !slices.Equal(head, want[:kk]) {
					t.Fatalf("n=%d k=%d: best %v, want %v", n, k, head, want[:kk])
				}
				if slices.SortFunc(got, better); !slices.Equal(got, want) {
					t.Fatalf("n=%d k=%d: selectBest lost or made elements", n, k)
				}
				if b := best(slices.Clone(s), k); !slices.Equal(b, want[:kk]) {
					t.Fatalf("n=%d k=%d: best = %v, want %v", n, k, b, want[:kk])
				}
			}
		}
	}
}

// TestRankingOrder: a ranking read in any steps, by one reader or several
// at once, gives the order of a full sort.
func TestRankingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 5, 100, 828} {
		s := randomScored(rng, n)
		docs := make([]indexDoc, n)
		want := slices.Clone(s)
		slices.SortFunc(want, better)
		// check reports the first difference from want (t.Errorf: it runs
		// on other goroutines too).
		check := func(t *testing.T, got []ranked) {
			t.Helper()
			if len(got) != n {
				t.Errorf("n=%d: read %d", n, len(got))
				return
			}
			for i, r := range got {
				if r.doc != &docs[want[i].pos] || r.score != want[i].score {
					t.Errorf("n=%d: %d-th scores %g, want %d (%g)", n, i, r.score, want[i].pos, want[i].score)
					return
				}
			}
		}
		for _, first := range []int{0, 1, 16, 50, 2000} {
			r := &ranking{docs: docs, order: slices.Clone(s)}
			var got []ranked
			for x := range r.all(first) {
				got = append(got, x)
			}
			check(t, got)
			if top := r.top(3); len(top) < min(3, n) {
				t.Fatalf("n=%d: top(3) has %d", n, len(top))
			}
		}
		r := &ranking{docs: docs, order: slices.Clone(s)}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				var got []ranked
				for x := range r.all(w * 7) {
					got = append(got, x)
				}
				check(t, got)
			})
		}
		wg.Wait()
	}
}

// TestSortScored: the radix sort orders as better does, ties, zeros and
// negative scores included, whatever the order it is given.
func TestSortScored(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 17, 300, 1000} {
		for i := range 20 {
			s := randomScored(rng, n)
			if i%2 == 1 {
				rng.Shuffle(n, func(a, b int) { s[a], s[b] = s[b], s[a] })
			}
			want := slices.Clone(s)
			slices.SortFunc(want, better)
			sortScored(s, make([]scored, n), make([]uint64, n))
			if !slices.Equal(s, want) {
				t.Fatalf("n=%d: got %v, want %v", n, s, want)
			}
		}
	}
}
