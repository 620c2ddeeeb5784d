package memory

import (
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
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
		s[n-1-i] = scored{score: v, pos: int32(i)}
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
			for x := range readAll(r, first) {
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
				for x := range readAll(r, w*7) {
					got = append(got, x)
				}
				check(t, got)
			})
		}
		wg.Wait()
	}
}

// readAll yields the messages of r best first, putting the first first
// in order at once and, in steps, more as they are read.
func readAll(r *ranking, first int) iter.Seq[ranked] {
	return func(yield func(ranked) bool) {
		for i, k := 0, max(first, 1); ; {
			top := r.top(k)
			for ; i < len(top); i++ {
				if !yield(top[i]) {
					return
				}
			}
			if len(top) >= r.len() {
				return
			}
			k = 2 * len(top)
		}
	}
}

// testFiller fills budget tokens as retrieved's walk does: messages of a
// turn that is a multiple of 7 are passed over, and the first message of
// each day (ten turns) takes 3 tokens more for its heading.
type testFiller struct {
	budget, used int
	days         map[int64]bool
	took         []int64
}

func (f *testFiller) room() int { return f.budget - f.used }

func (f *testFiller) need(d *indexDoc) int {
	if f.days[d.turn/10] {
		return d.tokens
	}
	return d.tokens + 3
}

func (f *testFiller) offer(d *indexDoc, h *docHot) bool {
	if h.turn != d.turn || int(h.tokens) != d.tokens {
		panic("offer: a message with another's docHot")
	}
	if d.turn%7 == 0 {
		return false
	}
	if n := f.need(d); n > f.room() {
		return f.room() < walkRoom
	}
	f.used += f.need(d)
	f.days[d.turn/10] = true
	f.took = append(f.took, d.turn)
	return false
}

// TestFill: a filler takes the same messages through fill, which leaves
// out those too long to fit and gives the best whole while they fit, as
// offered the whole ranking in order, for every budget, with messages of
// one to fifty tokens, passed over ones and headings.
func TestFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 5, 100, 828} {
		for range 10 {
			s := randomScored(rng, n)
			docs := make([]indexDoc, n)
			for i := range docs {
				docs[i].turn = int64(i)
				switch rng.IntN(4) {
				case 0:
					docs[i].tokens = 1 + rng.IntN(6) // smaller than walkRoom
				default:
					docs[i].tokens = 1 + rng.IntN(50)
				}
			}
			hot := make([]docHot, n)
			for i, d := range docs {
				hot[i] = docHot{turn: d.turn, tokens: int32(d.tokens)}
			}
			for i := range s {
				s[i].tokens = int32(docs[s[i].pos].tokens)
			}
			order := slices.Clone(s)
			slices.SortFunc(order, better)
			budgets := []int{0, 5, 9, 40, 300, 1000, 5000, 30000}
			for range 20 {
				budgets = append(budgets, rng.IntN(3000))
			}
			for _, budget := range budgets {
				want := &testFiller{budget: budget, days: map[int64]bool{}}
				for _, o := range order {
					if want.offer(&docs[o.pos], &hot[o.pos]) {
						break
					}
				}
				slices.Sort(want.took)
				for _, first := range []int{0, 16, 50, 200, 2000} {
					// A ranking is walked afresh, after a search read its
					// best, and again (its best already in order).
					r := &ranking{docs: docs, hot: hot, order: slices.Clone(s)}
					for walk := range 3 {
						if walk == 1 {
							r = &ranking{docs: docs, hot: hot, order: slices.Clone(s)}
							r.top(rng.IntN(n + 1))
						}
						got := &testFiller{budget: budget, days: map[int64]bool{}}
						r.fill(first, got)
						slices.Sort(got.took)
						if !slices.Equal(got.took, want.took) || got.used != want.used {
							t.Fatalf("n=%d budget=%d first=%d walk %d: took %d messages (%d tokens), want %d (%d)",
								n, budget, first, walk, len(got.took), got.used, len(want.took), want.used)
						}
					}
				}
			}
		}
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

// TestDayNames: a day's name is its date in the location, whichever times
// come before it, across a change of daylight saving time too.
func TestDayNames(t *testing.T) {
	locs := []*time.Location{time.UTC, time.FixedZone("", 8*3600)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		locs = append(locs, ny)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	start := time.Date(2024, 3, 8, 0, 0, 0, 0, time.UTC) // two days before a change
	for _, loc := range locs {
		n := dayNames{loc: loc}
		for range 2000 {
			at := time.UnixMilli(start.UnixMilli() + rng.Int64N(5*24*3600*1000))
			if got, want := n.of(at.UnixMilli()), at.In(loc).Format("2 Jan 2006"); got != want {
				t.Fatalf("%v in %v: %q, want %q", at, loc, got, want)
			}
		}
		if got := n.of(0); got != "" {
			t.Errorf("unset time: %q", got)
		}
	}
}

// TestSortExcerpts: excerpts come in conversation order, as a sort by
// order and role puts them, whether their orders are apart, the same for
// some, or as far apart as an int64 allows.
func TestSortExcerpts(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	roles := []string{"user", "assistant", "system"}
	for _, n := range []int{0, 1, 2, 47, 48, 49, 100, 700} {
		for rep := range 20 {
			docs := make([]indexDoc, n)
			es := make([]excerpt, n)
			for i := range es {
				docs[i].line.role = roles[rng.IntN(len(roles))]
				var o int64
				switch rep % 4 {
				case 0: // apart
					o = int64(rng.IntN(1<<40)) - 1<<39
				case 1: // some the same
					o = int64(rng.IntN(2 * n))
				case 2: // as far apart as can be
					o = []int64{math.MinInt64, math.MaxInt64, 0, 1}[rng.IntN(4)] + int64(i%2)
				default:
					o = int64(i)*2 + int64(rng.IntN(2))
				}
				es[i] = excerpt{order: o, doc: &docs[i], day: "d"}
			}
			want := slices.Clone(es)
			slowSortExcerpts(want)
			sortExcerpts(es)
			if !slices.Equal(es, want) {
				t.Fatalf("n=%d rep=%d: sortExcerpts differs from a sort by order and role", n, rep)
			}
		}
	}
}
