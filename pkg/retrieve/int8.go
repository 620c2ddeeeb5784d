package retrieve

import "math"

// Int8Vectors holds vectors of one dimension in a quarter of float32's
// memory: each as int8 components and one scale, v[i] ≈ scale·q[i] (the
// largest component maps to ±127). A scan over many of them reads a
// quarter of the bytes, which is what such a scan waits on once the
// vectors no longer fit the CPU's caches. Each component is then off by
// half a step (scale/2) at most, so the cosine of a unit vector with a
// unit query (Int16Query) by some scale/3 typically: 1e-4 and less for
// vectors of hundreds of dimensions whose largest component is small,
// enough to rank by, not to tell near-duplicates apart.
type Int8Vectors struct {
	dim    int
	comps  []int8
	scales []float32
}

// NewInt8Vectors returns an empty set of vectors of dimension dim.
func NewInt8Vectors(dim int) *Int8Vectors { return &Int8Vectors{dim: max(dim, 0)} }

// Len returns the number of vectors.
func (s *Int8Vectors) Len() int { return len(s.scales) }

// Grow appends n zero vectors.
func (s *Int8Vectors) Grow(n int) {
	s.comps = append(s.comps, make([]int8, n*s.dim)...)
	s.scales = append(s.scales, make([]float32, n)...)
}

// Set stores v (of the set's dimension) as the i-th vector.
func (s *Int8Vectors) Set(i int, v []float32) {
	s.scales[i] = encodeInt8(s.comps[i*s.dim:(i+1)*s.dim], v[:s.dim])
}

// Int16Query is a query vector prepared for Int8Vectors.Dot: int16
// components, scaled so that no dot product with int8 components can
// overflow an int32.
type Int16Query struct {
	comps []int16
	scale float32
}

// NewInt16Query prepares v for Int8Vectors.Dot. Its components keep 15
// bits (fewer beyond 512 dimensions, 13 at 1,536).
func NewInt16Query(v []float32) Int16Query {
	q := Int16Query{comps: make([]int16, len(v))}
	m := float32(0)
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) || len(v) == 0 {
		return q
	}
	top := min(math.MaxInt16, math.MaxInt32/(127*len(v)))
	inv := float32(top) / m
	for j, x := range v {
		q.comps[j] = int16(math.Round(float64(x * inv)))
	}
	q.scale = m / float32(top)
	return q
}

// Dot returns the inner product of the i-th vector with q (of the set's
// dimension).
func (s *Int8Vectors) Dot(i int, q Int16Query) float64 {
	sc := s.scales[i]
	if sc == 0 || q.scale == 0 {
		return 0
	}
	d := dotInt8(q.comps[:s.dim], s.comps[i*s.dim:(i+1)*s.dim])
	return float64(d) * float64(sc) * float64(q.scale)
}

// dotInt8Go is dotInt8 in Go. The sum is exact (no int32 overflows; see
// NewInt16Query), so every implementation returns the same.
func dotInt8Go(q []int16, v []int8) int32 {
	v = v[:len(q)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+3 < len(q); i += 4 {
		s0 += int32(q[i]) * int32(v[i])
		s1 += int32(q[i+1]) * int32(v[i+1])
		s2 += int32(q[i+2]) * int32(v[i+2])
		s3 += int32(q[i+3]) * int32(v[i+3])
	}
	for ; i < len(q); i++ {
		s0 += int32(q[i]) * int32(v[i])
	}
	return s0 + s1 + s2 + s3
}
