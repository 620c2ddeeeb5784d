package retrieve

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2

// dotInt8 is the inner product of q and v (as long as q): AVX2 over
// blocks of 32 components when the CPU has it, Go for the rest.
func dotInt8(q []int16, v []int8) int32 {
	v = v[:len(q)]
	n := len(q) &^ 31
	if !hasAVX2 || n == 0 {
		return dotInt8Go(q, v)
	}
	return dotInt8AVX2(&q[0], &v[0], n) + dotInt8Go(q[n:], v[n:])
}

// dotInt8AVX2 returns the inner product of the first n components (a
// multiple of 32, at least 32) of q and v.
//
//go:noescape
func dotInt8AVX2(q *int16, v *int8, n int) int32
