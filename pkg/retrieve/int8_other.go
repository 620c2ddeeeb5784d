//go:build !amd64

package retrieve

func dotInt8(q []int16, v []int8) int32 { return dotInt8Go(q, v) }
