package memory

import (
	"math"
	"math/bits"
	"slices"
	"sync"
)

// ranked is one message with its retrieval score.
type ranked struct {
	doc   *indexDoc // shared, read-only
	score float64
	pos   int32 // doc's position in the ranking's docs
}

// ranking is a search's result: the messages it ranked with their scores,
// put in order as they are read. A recall reads the best hundred or so of
// the up to recentDocs + 5·archiveHits messages a search ranks, and
// sorting them all cost about as much as scoring them; the order read is
// the same (better's, a total order).
//
// A ranking is shared (turnIndex.last) and safe for concurrent use.
type ranking struct {
	docs []indexDoc // the index's messages when ranked (read-only)
	hot  []docHot   // docs' docHot (read-only)

	mu sync.Mutex
	// order[:len(out)] is best first, each better than every one after
	// it; the rest are in no order.
	order []scored
	out   []ranked // the messages of order[:len(out)]
}

// sortBufs is sortScored's scratch, kept in sortScratch.
type sortBufs struct {
	tmp  []scored
	keys []uint64
}

var sortScratch = sync.Pool{New: func() any { return new(sortBufs) }}

// len returns the number of messages ranked.
func (r *ranking) len() int {
	if r == nil {
		return 0
	}
	return len(r.order)
}

// top returns the best k messages, best first (every message when there
// are fewer), shared and read-only. It may return more than k: a reader
// that wants more takes them in steps, and each step puts at least as
// many again in order.
func (r *ranking) top(k int) []ranked {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.out); k > n {
		k = min(max(k, 2*n), len(r.order))
		rest := r.order[n:]
		selectBest(rest, k-n)
		sc := sortScratch.Get().(*sortBufs)
		sc.tmp, sc.keys = grow(sc.tmp, k-n), grow(sc.keys, k-n)
		sortScored(rest[:k-n], sc.tmp, sc.keys)
		sortScratch.Put(sc)
		r.out = slices.Grow(r.out, k-n)
		for _, o := range rest[:k-n] {
			r.out = append(r.out, ranked{doc: &r.docs[o.pos], score: o.score, pos: o.pos})
		}
	}
	return r.out[:len(r.out):len(r.out)]
}

// walkRoom is the fewest tokens left of its budget for which a filler
// goes on past a message that does not fit; with fewer left, it stops
// there.
const walkRoom = 8

// A filler takes messages best first while they fit its budget, as
// retrieved's excerpts do: offered every message of a ranking in order,
// it takes those that fit, passes over the others, and stops at one that
// does not fit once less than walkRoom is left.
type filler interface {
	// room returns what is left of the budget; taking a message never
	// makes it grow.
	room() int
	// offer takes d (whose docHot is h) when it fits and reports whether
	// the walk stops.
	offer(d *indexDoc, h *docHot) (stop bool)
}

// bulkMin is the fewest messages fill puts in order at a time.
const bulkMin = 8

// fillScratch holds fill's copies of rankings' orders.
var fillScratch = sync.Pool{New: func() any { return new([]scored) }}

// fill offers f the messages best first, as a walk through the whole
// ranking in order would, without putting the whole ranking in order: f
// takes the same messages. A walk takes the first messages whole while
// they fit (about as many as first), and only where the budget runs out
// does the order of the rest matter, so fill walks the best first
// messages in the ranking's own order (top: put in order once, for every
// walk and search of the ranking), then puts in order, a few at a time,
// only the messages that may still fit (of no more tokens than f's room:
// the others f would pass over) while room is at least walkRoom, and
// once it is less, all the rest, where f stops.
func (r *ranking) fill(first int, f filler) {
	if r == nil || len(r.order) == 0 {
		return
	}
	head := r.top(max(first, bulkMin))
	for i := range head {
		if f.offer(head[i].doc, &r.hot[head[i].pos]) {
			return
		}
	}
	if len(head) == len(r.order) {
		return
	}
	buf := fillScratch.Get().(*[]scored)
	defer fillScratch.Put(buf)
	r.mu.Lock()
	// r.order[:len(head)] is head, in order, and stays so.
	lastHead := r.order[len(head)-1]
	pool := append((*buf)[:0], r.order[len(head):]...)
	r.mu.Unlock()
	*buf = pool
	last := &lastHead // the worst message offered

	// The first messages put in order after head: about as many as fit
	// what is left at head's mean size (each step puts twice as many in
	// order as the last, and each reads all those left).
	step := bulkMin
	if tokens := 0; len(head) > 0 {
		for _, x := range head {
			tokens += int(r.hot[x.pos].tokens)
		}
		if mean := max(tokens/len(head), 1); f.room()/mean > step {
			step = f.room()/mean + f.room()/mean/4
		}
	}
	filtered := false
	var chunk []scored // the next messages, in order
	sc := sortScratch.Get().(*sortBufs)
	defer sortScratch.Put(sc)
	for {
		if filtered && f.room() < walkRoom {
			// The messages left out come back where f meets them: all
			// those after the last offered, one at a time (f is about
			// to stop).
			pool, chunk, filtered, step = (*buf)[:0], nil, false, 1
			r.mu.Lock()
			for _, o := range r.order {
				if last.before(o) {
					pool = append(pool, o)
				}
			}
			r.mu.Unlock()
		}
		if len(chunk) == 0 {
			if rm := f.room(); rm >= walkRoom {
				kept := pool[:0]
				for _, o := range pool {
					if int(o.tokens) <= rm {
						kept = append(kept, o)
					}
				}
				filtered = filtered || len(kept) < len(pool)
				pool = kept
			}
			if len(pool) == 0 {
				return
			}
			k := min(step, len(pool))
			step *= 2
			if k == 1 {
				b := 0
				for i := range pool {
					if pool[i].before(pool[b]) {
						b = i
					}
				}
				pool[0], pool[b] = pool[b], pool[0]
			} else {
				selectBest(pool, k)
				sc.tmp, sc.keys = grow(sc.tmp, k), grow(sc.keys, k)
				sortScored(pool[:k], sc.tmp, sc.keys)
			}
			chunk, pool = pool[:k], pool[k:]
		}
		x := chunk[0] // a copy: last outlives chunk
		chunk = chunk[1:]
		if f.offer(&r.docs[x.pos], &r.hot[x.pos]) {
			return
		}
		last = &x
	}
}

// scored is a message's position with a score, and its tokens
// (indexDoc.tokens, in what would be padding): a walk that passes over
// the messages too long for what is left of its budget reads no more of
// them.
type scored struct {
	score  float64
	pos    int32
	tokens int32
}

// before reports whether a comes before b as better orders them.
func (a scored) before(b scored) bool {
	return a.score > b.score || (a.score == b.score && a.pos > b.pos)
}

// better orders scored best first, later first among equals (a total
// order: scores are never NaN).
func better(a, b scored) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return int(b.pos - a.pos)
}

// selectBest reorders s so that its first k are its k best (as better
// orders them), in no order: a quickselect, some 2·len(s) comparisons.
func selectBest(s []scored, k int) {
	lo, hi := 0, len(s) // s[:lo] are among the k best, s[hi:] are not
	if k <= 0 || k >= hi {
		return
	}
	for depth := 0; hi-lo > 16; depth++ {
		if depth == 48 { // unlucky pivots: sort what is left
			break
		}
		// The median of the first, middle and last as the pivot, moved
		// to the end.
		a, m, z := lo, lo+(hi-lo)/2, hi-1
		if s[m].before(s[a]) {
			s[a], s[m] = s[m], s[a]
		}
		if s[z].before(s[m]) {
			s[m], s[z] = s[z], s[m]
			if s[m].before(s[a]) {
				s[a], s[m] = s[m], s[a]
			}
		}
		s[m], s[z] = s[z], s[m]
		pivot := s[z]
		p := lo
		for j := lo; j < z; j++ {
			if s[j].before(pivot) {
				s[p], s[j] = s[j], s[p]
				p++
			}
		}
		s[p], s[z] = s[z], s[p]
		// Now s[lo:p] are better than the pivot at p, s[p+1:hi] worse.
		switch {
		case p == k || p == k-1:
			return
		case p > k:
			hi = p
		default:
			lo = p + 1
		}
	}
	slices.SortFunc(s[lo:hi], better)
}

// best returns the k best of s, best first and later first among equals
// (a total order, so the unstable sort gives the one result); s is
// reordered and, beyond k, overwritten.
func best(s []scored, k int) []scored {
	k = max(k, 0)
	if k < len(s) {
		// Keep the k best in a heap whose root is the worst of them: for
		// k much smaller than len(s), most are turned away by one
		// comparison (selectBest swaps about half of them).
		h := s[:k]
		down := func(i int) {
			for {
				c := 2*i + 1
				if c >= k {
					return
				}
				if c+1 < k && h[c].before(h[c+1]) {
					c++
				}
				if !h[i].before(h[c]) {
					return
				}
				h[i], h[c] = h[c], h[i]
				i = c
			}
		}
		for i := k/2 - 1; i >= 0; i-- {
			down(i)
		}
		for _, x := range s[k:] {
			if k > 0 && x.before(h[0]) {
				h[0] = x
				down(0)
			}
		}
		s = h
	}
	slices.SortFunc(s, better)
	return s
}

// sortScored sorts s as better orders, with tmp and keys (as long as s)
// for scratch. It sorts integers, fast: each score's bits,
// ordered as the scores are, with the lowest bits replaced by the
// element's index (so equal keys keep their order); elements whose keys
// agree but for those bits are then put in order by best's comparison.
// Scores are never NaN.
func sortScored(s, tmp []scored, keys []uint64) {
	n := len(s)
	if n < 2 {
		return
	}
	ib := bits.Len(uint(n - 1))
	if ib > 32 {
		slices.SortFunc(s, better)
		return
	}
	low := uint64(1)<<ib - 1
	keys = keys[:n]
	for i, x := range s {
		b := math.Float64bits(x.score)
		if b == 1<<63 { // −0 is 0
			b = 0
		}
		if b&(1<<63) != 0 { // ascending as the score ascends
			b = ^b
		} else {
			b |= 1 << 63
		}
		keys[i] = ^b&^low | uint64(i) // ascending as the score descends
	}
	slices.Sort(keys)
	for j, k := range keys {
		tmp[j] = s[k&low]
	}
	for j := 0; j < n; {
		e := j + 1
		for e < n && keys[e]&^low == keys[j]&^low {
			e++
		}
		if e-j > 1 {
			slices.SortFunc(tmp[j:e], better)
		}
		j = e
	}
	copy(s, tmp[:n])
}
