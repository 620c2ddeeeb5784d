package kb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// The vector log holds the vectors of the chunks added to an embedded
// index since its last snapshot: with the snapshot, the only copy of the
// vectors on disk (the chunk rows of a local knowledge base hold none).
// An ingestion appends its chunks' vectors and syncs the log before it
// commits their rows, so every committed chunk's vector is in the
// snapshot or the log; records whose chunk has no row (an ingestion that
// failed or was killed before its commit) are ignored, and dropped when
// the log is compacted into a new snapshot. Removals need no record: the
// rows say which chunks exist.
//
// Layout: a header (vecLogMagic, the epoch, the dimension), then records
// of [uvarint id length][id][dim float32s, little-endian][CRC-32 of the
// id and vector bytes]. A torn last record (a crash mid-append) ends the
// log; the next append starts where the valid records end.

const (
	vecLogFile  = "vectors.log"
	vecLogMagic = "MIXKBVLOG1"
)

// vecLog is an open vector log, for appending.
type vecLog struct {
	f     *os.File
	w     *bufio.Writer
	epoch string
	dim   int
	size  int64 // bytes of valid content (header and whole records)
	buf   []byte
}

// logHeader is the header for epoch and dim.
func logHeader(epoch string, dim int) []byte {
	h := []byte(vecLogMagic)
	h = binary.AppendUvarint(h, uint64(len(epoch)))
	h = append(h, epoch...)
	return binary.AppendUvarint(h, uint64(dim))
}

// openVecLog opens the log at path for appending records of epoch and
// dim: a log of another epoch or dimension, or an unreadable one, is
// started again empty; a torn tail is cut off.
func openVecLog(path, epoch string, dim int) (*vecLog, error) {
	valid, err := scanVecLog(path, epoch, dim, nil)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open vector log: %w", err)
	}
	if valid == 0 {
		head := logHeader(epoch, dim)
		if err := f.Truncate(0); err == nil {
			_, err = f.WriteAt(head, 0)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("start vector log: %w", err)
		}
		valid = int64(len(head))
	} else if err := f.Truncate(valid); err != nil {
		f.Close()
		return nil, fmt.Errorf("cut vector log: %w", err)
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &vecLog{f: f, w: bufio.NewWriterSize(f, 1<<16), epoch: epoch, dim: dim, size: valid}, nil
}

// append writes one record (buffered: sync makes it durable).
func (l *vecLog) append(id string, v []float32) error {
	if len(v) != l.dim {
		return fmt.Errorf("vector log: %s has dimension %d, log %d", id, len(v), l.dim)
	}
	b := binary.AppendUvarint(l.buf[:0], uint64(len(id)))
	start := len(b)
	b = append(b, id...)
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("vector log: %w", err)
	}
	l.size += int64(len(b))
	return nil
}

// sync flushes and syncs the records appended so far.
func (l *vecLog) sync() error {
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("vector log: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("vector log: %w", err)
	}
	return nil
}

// reset empties the log (after a snapshot took in its records).
func (l *vecLog) reset() error {
	l.w.Reset(l.f)
	head := logHeader(l.epoch, l.dim)
	if err := l.f.Truncate(int64(len(head))); err != nil {
		return fmt.Errorf("vector log: %w", err)
	}
	if _, err := l.f.WriteAt(head, 0); err != nil {
		return fmt.Errorf("vector log: %w", err)
	}
	if _, err := l.f.Seek(int64(len(head)), io.SeekStart); err != nil {
		return err
	}
	l.size = int64(len(head))
	return l.f.Sync()
}

func (l *vecLog) close() error {
	err := l.w.Flush()
	return errors.Join(err, l.f.Close())
}

// scanVecLog reads the log at path from its first record (from, when
// given, from that offset) and calls fn with each whole record; it
// returns the offset where the valid records end, 0 when the log is
// missing or was written for another epoch or dimension. fn's vector is
// reused by the next call.
func scanVecLog(path, epoch string, dim int, fn func(id string, v []float32) error) (int64, error) {
	return scanVecLogFrom(path, epoch, dim, 0, fn)
}

func scanVecLogFrom(path, epoch string, dim int, from int64, fn func(id string, v []float32) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read vector log: %w", err)
	}
	defer f.Close()
	head := logHeader(epoch, dim)
	got := make([]byte, len(head))
	if _, err := io.ReadFull(f, got); err != nil || string(got) != string(head) {
		return 0, nil
	}
	pos := int64(len(head))
	if from > pos {
		if _, err := f.Seek(from, io.SeekStart); err != nil {
			return 0, err
		}
		pos = from
	}
	r := bufio.NewReaderSize(f, 1<<16)
	v := make([]float32, dim)
	var rec []byte
	for {
		n, err := binary.ReadUvarint(r)
		if err != nil || n == 0 || n > 1<<10 {
			return pos, nil
		}
		size := int(n) + 4*dim
		if cap(rec) < size+4 {
			rec = make([]byte, size+4)
		}
		rec = rec[:size+4]
		if _, err := io.ReadFull(r, rec); err != nil {
			return pos, nil
		}
		if crc32.ChecksumIEEE(rec[:size]) != binary.LittleEndian.Uint32(rec[size:]) {
			return pos, nil
		}
		id := string(rec[:n])
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(rec[int(n)+4*i:]))
		}
		if fn != nil {
			if err := fn(id, v); err != nil {
				return pos, err
			}
		}
		pos += int64(uvarintLen(n) + size + 4)
	}
}

func uvarintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}
