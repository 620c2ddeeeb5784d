package memory

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/viterin/vek/vek32"
)

// vectors holds the unit vectors of a conversation's messages, by
// position. A vector with at most a quarter of its dimensions non-zero (as
// the offline hashing embedder's are: some 60 to 100 of 512) is stored
// sparse, a bitmap of those dimensions and their values, in a fifth of the
// dense vector's memory; its dot product with a question's vector reads
// only the dimensions both have. That product is exactly vek32.Dot's on
// the dense vectors (the same fused multiply-adds into the same 32 lanes,
// summed in the same order), so a ranking does not depend on how a vector
// is stored; where vek32.Dot computes otherwise (a machine without AVX2),
// every vector is stored dense.
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
	if 4*nz > vs.dim || !sparseDotExact() {
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

// query is a question's vector prepared for dot products: the vector and
// the bitmap of its non-zero dimensions.
type query struct {
	u    []float32
	bits []uint64
}

func (vs *vectors) query(u []float32) query {
	q := query{u: u, bits: make([]uint64, vs.words)}
	for i, f := range u {
		if f != 0 {
			q.bits[i/64] |= 1 << (i % 64)
		}
	}
	return q
}

// dot returns the dot product of q's vector and message p's (which has
// one), as vek32.Dot computes it.
func (vs *vectors) dot(q query, p int) float32 {
	r := vs.refs[p]
	if r.bits < 0 {
		return vek32.Dot(q.u, vs.vals[r.vals:r.vals+vs.dim])
	}
	return sparseDot(q.u, q.bits, vs.bits[r.bits:r.bits+vs.words], vs.vals[r.vals:], vs.dim)
}

// sparseDot returns vek32.Dot(u, v) for v of dim dimensions given as the
// bitmap vbits of its non-zero ones and their values vals, in order; ubits
// is u's bitmap. It mirrors vek's AVX2 kernel: over the first dim&^31
// dimensions, dimension i is fused-multiply-added into lane i%32; the
// lanes are summed as the kernel sums its four registers and their halves;
// the remaining dimensions are fused-multiply-added in turn. A zero
// product leaves a lane as it is (lanes start at +0 and never become −0),
// so only the dimensions both vectors have are read.
func sparseDot(u []float32, ubits, vbits []uint64, vals []float32, dim int) float32 {
	var acc [32]float32
	body := dim &^ 31
	var res float32
	summed := false
	sum := func() {
		if body == 0 {
			return
		}
		var a [8]float32
		for j := range a {
			a[j] = acc[j] + acc[8+j]
			a[j] += acc[16+j]
			a[j] += acc[24+j]
		}
		b0, b1, b2, b3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
		res = (b0 + b2) + (b1 + b3)
	}
	k := 0 // vals index of word w's first value
	for w, vw := range vbits {
		both := vw & ubits[w]
		for both != 0 {
			b := bits.TrailingZeros64(both)
			both &= both - 1
			i := w*64 + b
			v := vals[k+bits.OnesCount64(vw&(1<<b-1))]
			if i < body {
				// fma32, its common case inlined.
				p := float64(u[i]) * float64(v)
				s := p + float64(acc[i&31])
				if bs := math.Float64bits(s); bs&(1<<29-1) != 1<<28 && bs&(0x7ff<<52) >= (1023-125)<<52 {
					acc[i&31] = float32(s)
				} else {
					acc[i&31] = fma32Halfway(p, s, acc[i&31])
				}
				continue
			}
			if !summed {
				sum()
				summed = true
			}
			res = fma32(u[i], v, res)
		}
		k += bits.OnesCount64(vw)
	}
	if !summed {
		sum()
	}
	return res
}

// fma32 returns a·b + c rounded once to float32, as the FMA instructions
// compute it. The product is exact in float64 and the sum is rounded to
// float64 first; that second rounding only matters when it lands exactly
// halfway between two float32 values (or the sum is too small for a
// normal float32), left to fma32Halfway.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if bs := math.Float64bits(s); bs&(1<<29-1) != 1<<28 && bs&(0x7ff<<52) >= (1023-125)<<52 {
		return float32(s)
	}
	return fma32Halfway(p, s, c)
}

// fma32Halfway is fma32 for a sum s = p + c rounded to float64 that falls
// halfway between two float32 values or below the normal ones: the sum's
// rounding error then says which way the exact value lies.
func fma32Halfway(p, s float64, c float32) float32 {
	r := float32(s)
	if float64(r) == s {
		return r
	}
	toward := float32(math.Inf(1))
	if s < float64(r) {
		toward = float32(math.Inf(-1))
	}
	o := math.Nextafter32(r, toward)
	if s != (float64(r)+float64(o))/2 {
		return r
	}
	bv := s - p // TwoSum: the exact sum is s + e
	e := (p - (s - bv)) + (float64(c) - bv)
	switch {
	case e > 0:
		return max(r, o)
	case e < 0:
		return min(r, o)
	}
	return r
}

// sparseDotExact reports whether sparseDot computes exactly what vek32.Dot
// does on this machine (vek uses its AVX2 kernel), probing random vectors
// once.
var sparseDotExact = sync.OnceValue(func() bool {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dim := range []int{512, 384, 100, 33, 31, 7, 1} {
		for range 50 {
			u, v := make([]float32, dim), make([]float32, dim)
			for i := range dim {
				if rng.IntN(3) > 0 {
					u[i] = float32(rng.NormFloat64())
				}
				if rng.IntN(3) > 0 {
					v[i] = float32(rng.NormFloat64()) * float32(math.Pow(2, float64(rng.IntN(40)-20)))
				}
			}
			vs := newVectors(dim)
			vs.grow()
			vs.refs[0] = vecRef{vals: 0, bits: 0}
			vs.bits = make([]uint64, vs.words)
			for i, f := range v {
				if f != 0 {
					vs.bits[i/64] |= 1 << (i % 64)
					vs.vals = append(vs.vals, f)
				}
			}
			if math.Float32bits(vs.dot(vs.query(u), 0)) != math.Float32bits(vek32.Dot(u, v)) {
				return false
			}
		}
	}
	return true
})
