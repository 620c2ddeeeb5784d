package memory

import (
	"math/bits"

	"github.com/viterin/vek/vek32"
)

// vectors holds the unit vectors of a conversation's messages, by
// position. A vector with at most a quarter of its dimensions non-zero (as
// the offline hashing embedder's are: some 60 to 100 of 512) is stored
// sparse, a bitmap of those dimensions and their values, in a fifth of the
// dense vector's memory; its dot product with a question's vector reads
// only the dimensions both have non-zero.
type vectors struct {
	dim   int
	words int      // bitmap words of a sparse vector
	refs  []vecRef // by message
	bits  []uint64
	vals  []float32
}

// vecRef locates one message's vector: vals < 0 when it has none, bits < 0
// when it is dense (dim values from vals).
type vecRef struct{ vals, bits int }

func newVectors(dim int) *vectors { return &vectors{dim: dim, words: (dim + 63) / 64} }

// grow adds a message without a vector.
func (vs *vectors) grow() { vs.refs = append(vs.refs, vecRef{vals: -1, bits: -1}) }

// set stores v (of dim dimensions) as message p's vector.
func (vs *vectors) set(p int, v []float32) {
	nz := 0
	for _, f := range v {
		if f != 0 {
			nz++
		}
	}
	if 4*nz > vs.dim {
		vs.refs[p] = vecRef{vals: len(vs.vals), bits: -1}
		vs.vals = append(vs.vals, v...)
		return
	}
	vs.refs[p] = vecRef{vals: len(vs.vals), bits: len(vs.bits)}
	vs.bits = append(vs.bits, make([]uint64, vs.words)...)
	b := vs.bits[len(vs.bits)-vs.words:]
	for i, f := range v {
		if f != 0 {
			b[i/64] |= 1 << (i % 64)
			vs.vals = append(vs.vals, f)
		}
	}
}

// query is a question's vector prepared for dot products with one
// goroutine's messages: the vector, the bitmap of its non-zero dimensions,
// and a zero vector to spread a sparse vector's shared dimensions into.
type query struct {
	u, spread []float32
	bits      []uint64
	touched   []int
}

func (vs *vectors) query(u []float32) *query {
	q := &query{u: u, spread: make([]float32, len(u)), bits: make([]uint64, vs.words)}
	for i, f := range u {
		if f != 0 {
			q.bits[i/64] |= 1 << (i % 64)
		}
	}
	return q
}

// dot returns vek32.Dot of q's vector and message p's (which has one). A
// sparse vector's dimensions that q's vector does not have add a zero
// product, which leaves any partial sum as it is (sums start at +0 and
// never become −0), so the product of q's vector and only the dimensions
// both have is exactly the whole one.
func (vs *vectors) dot(q *query, p int) float32 {
	r := vs.refs[p]
	if r.bits < 0 {
		return vek32.Dot(q.u, vs.vals[r.vals:r.vals+vs.dim])
	}
	vals := vs.vals[r.vals:]
	q.touched = q.touched[:0]
	k := 0 // vals index of word w's first value
	for w, vw := range vs.bits[r.bits : r.bits+vs.words] {
		for both := vw & q.bits[w]; both != 0; both &= both - 1 {
			b := bits.TrailingZeros64(both)
			i := w*64 + b
			q.spread[i] = vals[k+bits.OnesCount64(vw&(1<<b-1))]
			q.touched = append(q.touched, i)
		}
		k += bits.OnesCount64(vw)
	}
	if len(q.touched) == 0 {
		return 0
	}
	d := vek32.Dot(q.u, q.spread)
	for _, i := range q.touched {
		q.spread[i] = 0
	}
	return d
}
