package retrieve

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// ErrFormat is returned when a serialised index is not in the expected
// format (wrong magic, unknown version or inconsistent content).
var ErrFormat = errors.New("retrieve: bad index format")

// ErrStaged is returned by HNSW.WriteTo while staged vectors are not yet
// linked (see Stage and LinkPending).
var ErrStaged = errors.New("retrieve: staged vectors not yet linked")

// encoder writes the little-endian binary format of the indexes, keeping the
// first error and the byte count.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	buf [binary.MaxVarintLen64]byte
	// chunk is putWords' scratch: one per encoder, not one per slice
	// written (a graph writes one slice per node).
	chunk []byte
}

// newEncoder returns an encoder to w that has written magic, the format's
// name and version.
func newEncoder(w io.Writer, magic string) *encoder {
	e := &encoder{w: bufio.NewWriterSize(w, 1<<16)}
	e.bytes([]byte(magic))
	return e
}

func (e *encoder) bytes(p []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(p)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) uvarint(x uint64) {
	n := binary.PutUvarint(e.buf[:], x)
	e.bytes(e.buf[:n])
}

func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], x)
	e.bytes(e.buf[:4])
}

func (e *encoder) f64(x float64) {
	binary.LittleEndian.PutUint64(e.buf[:8], math.Float64bits(x))
	e.bytes(e.buf[:8])
}

func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += int64(n)
		e.err = err
	}
}

// f32s writes a float32 slice in chunks, without one big temporary buffer.
func (e *encoder) f32s(v []float32) { putWords(e, v, math.Float32bits) }

// u32s writes a uint32 slice in chunks.
func (e *encoder) u32s(v []uint32) { putWords(e, v, identity) }

// putWords writes v as little-endian 32-bit words (word of each element)
// in chunks, without one big temporary buffer.
func putWords[T any](e *encoder, v []T, word func(T) uint32) {
	if e.chunk == nil {
		e.chunk = make([]byte, 4096)
	}
	chunk := e.chunk
	for len(v) > 0 && e.err == nil {
		m := min(len(v), len(chunk)/4)
		for i := 0; i < m; i++ {
			binary.LittleEndian.PutUint32(chunk[4*i:], word(v[i]))
		}
		e.bytes(chunk[:4*m])
		v = v[m:]
	}
}

func identity(x uint32) uint32 { return x }

// flush writes out what is buffered and returns the bytes written, with
// the first error wrapped as what's ("write bm25: ...").
func (e *encoder) flush(what string) (int64, error) {
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return e.n, fmt.Errorf("%s: %w", what, e.err)
	}
	return e.n, nil
}

// decoder reads what encoder writes, keeping the first error.
type decoder struct {
	r     *bufio.Reader
	err   error
	buf   [8]byte
	chunk []byte // getWords' scratch (see encoder.chunk)
}

// newDecoder returns a decoder of r that has read and checked magic.
func newDecoder(r io.Reader, magic string) *decoder {
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16)}
	d.magic(magic)
	return d
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		d.err = err
	}
}

func (d *decoder) full(p []byte) {
	if d.err != nil {
		return
	}
	if _, err := io.ReadFull(d.r, p); err != nil {
		d.fail(err)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(d.r)
	if err != nil {
		d.fail(err)
	}
	return x
}

// count reads a length and checks it against limit, so corrupt input cannot
// make the reader allocate without bound.
func (d *decoder) count(limit uint64) int {
	x := d.uvarint()
	if x > limit {
		d.fail(fmt.Errorf("%w: count %d exceeds %d", ErrFormat, x, limit))
		return 0
	}
	return int(x)
}

func (d *decoder) u32() uint32 {
	d.full(d.buf[:4])
	if d.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(d.buf[:4])
}

func (d *decoder) f64() float64 {
	d.full(d.buf[:8])
	if d.err != nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(d.buf[:8]))
}

func (d *decoder) str() string {
	n := d.count(1 << 20)
	if d.err != nil {
		return ""
	}
	p := make([]byte, n)
	d.full(p)
	return string(p)
}

func (d *decoder) f32s(v []float32) { getWords(d, v, math.Float32frombits) }

func (d *decoder) u32s(v []uint32) { getWords(d, v, identity) }

// getWords reads len(v) little-endian 32-bit words into v (elem of each
// word), in chunks as putWords wrote them.
func getWords[T any](d *decoder, v []T, elem func(uint32) T) {
	if d.chunk == nil {
		d.chunk = make([]byte, 4096)
	}
	chunk := d.chunk
	for len(v) > 0 && d.err == nil {
		m := min(len(v), len(chunk)/4)
		d.full(chunk[:4*m])
		for i := 0; i < m; i++ {
			v[i] = elem(binary.LittleEndian.Uint32(chunk[4*i:]))
		}
		v = v[m:]
	}
}

// magic checks a format header.
func (d *decoder) magic(want string) {
	d.oneOf(want)
}

// oneOf reads a format header of the length of the wants and returns the
// index of the one it is (failing when none).
func (d *decoder) oneOf(wants ...string) int {
	p := make([]byte, len(wants[0]))
	d.full(p)
	if d.err != nil {
		return -1
	}
	for i, w := range wants {
		if string(p) == w {
			return i
		}
	}
	d.fail(fmt.Errorf("%w: header %q, want %q", ErrFormat, p, wants[0]))
	return -1
}
