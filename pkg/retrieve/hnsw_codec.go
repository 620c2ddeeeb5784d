package retrieve

// This file holds the HNSW index's on-disk form: WriteTo and ReadHNSW.

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand"
)

// The two forms of the file: vectors as float32 (v1), or as int8 codes
// with a scale per vector (i8, see Int8). The rest is the same.
const (
	hnswMagic     = "mixchat-hnsw\x00v1"
	hnswMagicInt8 = "mixchat-hnsw\x00i8"
)

// Vector encodings of a saved index (WriteEncoded).
const (
	Float32 = "float32" // 4 bytes a dimension, exact
	// Int8 keeps each vector as one byte a dimension plus a float32 scale
	// (its largest magnitude / 127), a quarter of the size; a vector read
	// back differs from the original by at most half a step in each
	// dimension (cosines by about 0.001 at 512 dimensions).
	Int8 = "int8"
)

// WriteTo serialises the index: parameters, ids, vectors (float32) and the
// graph. ReadHNSW restores it without rebuilding the graph.
func (h *HNSW) WriteTo(w io.Writer) (int64, error) {
	return h.writeTo(w, Float32)
}

// Encoded returns what writes the index with its vectors in encoding
// (Float32, Int8; WriteTo for any other), for a caller that takes an
// io.WriterTo.
func (h *HNSW) Encoded(encoding string) io.WriterTo {
	return writerToFunc(func(w io.Writer) (int64, error) { return h.writeTo(w, encoding) })
}

type writerToFunc func(w io.Writer) (int64, error)

func (f writerToFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

func (h *HNSW) writeTo(w io.Writer, encoding string) (int64, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if n := len(h.ids) - h.linked; n > 0 {
		// The file holds a graph: staged vectors would be read back as
		// nodes no search reaches.
		return 0, fmt.Errorf("write hnsw: %w", ErrStaged)
	}
	magic := hnswMagic
	if encoding == Int8 {
		magic = hnswMagicInt8
	}
	e := newEncoder(w, magic)
	e.uvarint(uint64(h.dim))
	e.uvarint(uint64(h.p.M))
	e.uvarint(uint64(h.p.EfConstruction))
	e.uvarint(uint64(h.p.EfSearch))
	e.uvarint(uint64(int64(h.p.ExactBelow)))
	e.uvarint(uint64(h.p.Seed))
	e.f64(h.p.TargetRecall)
	e.uvarint(uint64(h.ef))
	exact := uint64(0)
	if h.exactMode {
		exact = 1
	}
	e.uvarint(exact)
	e.uvarint(uint64(h.tunedAt))
	e.uvarint(uint64(len(h.ids)))
	e.uvarint(uint64(h.maxLvl + 1))
	e.uvarint(uint64(h.entry))
	for n, id := range h.ids {
		e.str(id)
		flags := uint64(h.levels[n]) << 1
		if h.deleted[n] {
			flags |= 1
		}
		e.uvarint(flags)
	}
	if encoding == Int8 {
		codes := make([]byte, h.dim)
		for n := range h.ids {
			scale := encodeInt8(codes, h.vec(uint32(n)))
			e.u32(math.Float32bits(scale))
			e.bytes(codes)
		}
	} else {
		e.f32s(h.vecs)
	}
	e.u32s(h.base)
	for _, up := range h.upper {
		e.u32s(up)
	}
	return e.flush("write hnsw")
}

// ReadHNSW reads an index written by (*HNSW).WriteTo.
func ReadHNSW(r io.Reader) (*HNSW, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16)}
	int8s := d.oneOf(hnswMagic, hnswMagicInt8) == 1
	dim := d.count(1 << 16)
	var p HNSWParams
	p.M = d.count(1 << 10)
	p.EfConstruction = d.count(1 << 20)
	p.EfSearch = d.count(1 << 20)
	p.ExactBelow = int(int64(d.uvarint()))
	p.Seed = int64(d.uvarint())
	p.TargetRecall = d.f64()
	ef := d.count(1 << 20)
	exactMode := d.count(1) == 1
	tunedAt := d.count(1 << 32)
	n := d.count(1 << 32)
	top := d.count(33) - 1
	entry := uint32(d.count(1 << 32))
	if d.err != nil {
		return nil, fmt.Errorf("read hnsw: %w", d.err)
	}
	if dim == 0 || p.M < 2 || !(p.TargetRecall > 0 && p.TargetRecall <= 1) || (n > 0 && (top < 0 || int(entry) >= n)) || (n == 0 && top >= 0) {
		return nil, fmt.Errorf("read hnsw: %w: inconsistent header", ErrFormat)
	}
	h := NewHNSW(dim, p)
	h.p = p
	h.rng = rand.New(rand.NewSource(p.Seed + int64(n)))
	h.grow(n)
	for i := 0; i < n && d.err == nil; i++ {
		id := d.str()
		flags := d.uvarint()
		del := flags&1 == 1
		lvl := int(flags >> 1)
		if lvl > top || (del != (id == "")) {
			d.fail(fmt.Errorf("%w: node %d", ErrFormat, i))
			break
		}
		if !del {
			if _, dup := h.slot[id]; dup {
				d.fail(fmt.Errorf("%w: duplicate id %q", ErrFormat, id))
				break
			}
			h.slot[id] = uint32(i)
		} else {
			h.ndel++
		}
		h.ids = append(h.ids, id)
		h.deleted = append(h.deleted, del)
		h.levels = append(h.levels, uint8(lvl))
		var up []uint32
		if lvl > 0 {
			up = make([]uint32, lvl*(1+p.M))
		}
		h.upper = append(h.upper, up)
	}
	if d.err != nil {
		return nil, fmt.Errorf("read hnsw: %w", d.err)
	}
	h.vecs = h.vecs[:n*dim]
	if int8s {
		codes := make([]byte, dim)
		for i := 0; i < n && d.err == nil; i++ {
			scale := math.Float32frombits(d.u32())
			d.full(codes)
			decodeInt8(h.vec(uint32(i)), codes, scale)
		}
	} else {
		d.f32s(h.vecs)
	}
	h.base = h.base[:n*(1+h.m0())]
	d.u32s(h.base)
	for _, up := range h.upper {
		d.u32s(up)
	}
	if d.err != nil {
		return nil, fmt.Errorf("read hnsw: %w", d.err)
	}
	if n > 0 && int(h.levels[entry]) != top {
		return nil, fmt.Errorf("read hnsw: %w: entry level", ErrFormat)
	}
	if err := h.checkLinks(); err != nil {
		return nil, fmt.Errorf("read hnsw: %w", err)
	}
	h.entry, h.maxLvl, h.linked = entry, top, n
	h.ef, h.exactMode, h.tunedAt = max(ef, 1), exactMode, tunedAt
	return h, nil
}

// checkLinks verifies that every link block is within bounds, so a corrupt
// file cannot make Search index out of range.
func (h *HNSW) checkLinks() error {
	n := uint32(len(h.ids))
	for i := uint32(0); i < n; i++ {
		for l := 0; l <= int(h.levels[i]); l++ {
			b := h.block(i, l)
			if int(b[0]) > len(b)-1 {
				return fmt.Errorf("%w: node %d layer %d: %d links", ErrFormat, i, l, b[0])
			}
			for _, x := range b[1 : 1+b[0]] {
				if x >= n || int(h.levels[x]) < l {
					return fmt.Errorf("%w: node %d layer %d: bad link %d", ErrFormat, i, l, x)
				}
			}
		}
	}
	return nil
}

// encodeInt8 writes v's int8 codes into codes (as int8, or as their two's
// complement bytes for a snapshot) and returns the scale that decodes
// them: v[i] ≈ scale·codes[i]. A vector that is zero or not finite is
// coded as zero, with scale 0.
func encodeInt8[T byte | int8](codes []T, v []float32) float32 {
	var m float32
	for _, x := range v {
		m = max(m, abs32(x))
	}
	if m == 0 || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
		clear(codes)
		return 0
	}
	scale := m / 127
	for i, x := range v {
		codes[i] = T(int8(math.Round(float64(x / scale))))
	}
	return scale
}

// decodeInt8 is encodeInt8's inverse, into v.
func decodeInt8(v []float32, codes []byte, scale float32) {
	for i, c := range codes {
		v[i] = float32(int8(c)) * scale
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}
