package retrieve

// This file holds the HNSW index's on-disk form: WriteTo and ReadHNSW.

import (
	"fmt"
	"io"
	"math/rand"
)

const hnswMagic = "mixchat-hnsw\x00v1"

// WriteTo serialises the index: parameters, ids, vectors and the graph.
// ReadHNSW restores it without rebuilding the graph.
func (h *HNSW) WriteTo(w io.Writer) (int64, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e := newEncoder(w, hnswMagic)
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
	e.f32s(h.vecs)
	e.u32s(h.base)
	for _, up := range h.upper {
		e.u32s(up)
	}
	return e.flush("write hnsw")
}

// ReadHNSW reads an index written by (*HNSW).WriteTo.
func ReadHNSW(r io.Reader) (*HNSW, error) {
	d := newDecoder(r, hnswMagic)
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
	h.grow(n, true)
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
	d.f32s(h.vecs)
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
	h.entry, h.maxLvl = entry, top
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
