package kb

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The on-disk snapshots of a knowledge base's indexes: written whole now
// and then (saveSnapshots, compact), read at open.

// snapHeader is a snapshot's header: the magic, the KB's epoch and a tag
// (the term function's version for the lexical index).
func snapHeader(epoch, tag string) []byte {
	h := []byte(snapMagic)
	h = binary.AppendUvarint(h, uint64(len(epoch)))
	h = append(h, epoch...)
	h = binary.AppendUvarint(h, uint64(len(tag)))
	return append(h, tag...)
}

// readSnapshot reads a snapshot file written for epoch and tag; ok is
// false when it is missing, of another epoch or tag, or unreadable.
func readSnapshot(path, epoch, tag string, read func(io.Reader) (any, error)) (any, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	want := snapHeader(epoch, tag)
	head := make([]byte, len(want))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != string(want) {
		return nil, false
	}
	v, err := read(r)
	if err != nil {
		return nil, false
	}
	return v, true
}

// writeSnapshot writes a snapshot for epoch and tag atomically (temporary
// file, synced, then rename).
func writeSnapshot(path, epoch, tag string, w io.WriterTo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if _, err := bw.Write(snapHeader(epoch, tag)); err == nil {
		_, err = w.WriteTo(bw)
		if err == nil {
			err = bw.Flush()
		}
		if err == nil {
			err = tmp.Sync()
		}
		if err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// saveSnapshots writes the BM25 index and the HNSW graph (with its
// vectors), then empties the vector log, whose records the graph now
// holds. A failure costs only a rebuild (or a longer log) at the next
// open. With replicas there are none: the indexes are built from the rows.
func (b *base) saveSnapshots() error {
	if b.dbOriginals {
		// The rows hold the vectors: the log was only the way from the
		// embedder to this replica's index.
		b.dirty, b.lexDirty = 0, 0
		if b.log != nil {
			return b.log.reset()
		}
		return nil
	}
	if err := writeSnapshot(filepath.Join(b.dir, lexSnapshot), b.epoch, lexVersion, b.lex); err != nil {
		return fmt.Errorf("save bm25 snapshot: %w", err)
	}
	b.lexDirty = 0
	if b.mem != nil {
		if h := b.mem.graph(); h != nil {
			if h.Pending() > 0 {
				// The graph is still taking in staged vectors: the log
				// keeps them, and the link's end writes the graph
				// (afterLink), or the next open indexes them.
				return nil
			}
			if err := writeSnapshot(filepath.Join(b.dir, vecSnapshot), b.epoch, "", h.Encoded(b.vecEncoding)); err != nil {
				return fmt.Errorf("save hnsw snapshot: %w", err)
			}
			if b.log != nil {
				if err := b.log.reset(); err != nil {
					return err
				}
			} else if err := os.Remove(filepath.Join(b.dir, vecLogFile)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	b.dirty = 0
	return nil
}

// compact writes the snapshots when the changes since the last ones are
// many: more than a quarter of the chunks, or a vector log past
// compactLogBytes. Smaller changes stay in the vector log and the rows,
// so a small upload into a large knowledge base writes about its own
// size. The caller holds wmu.
func (b *base) compact() error {
	if b.dirty == 0 {
		return nil
	}
	n := b.lex.Len()
	if b.mem != nil {
		n = max(n, b.mem.Len())
	}
	logFull := b.log != nil && b.log.size >= compactLogBytes
	if b.dirty*4 < n && !logFull {
		return nil
	}
	if b.lexDirty*4 < n && !logFull && b.graphPending() {
		// The lexical snapshot holds all but a few of the changes, and
		// the graph's waits for the link of its staged vectors (whose end
		// compacts again, afterLink): writing the lexical one again now,
		// and after every write until then, would rewrite the whole index
		// for each small upload.
		return nil
	}
	return b.saveSnapshots()
}

// graphPending reports whether the embedded index's graph holds staged
// vectors, so that saveSnapshots cannot write it yet.
func (b *base) graphPending() bool {
	if b.mem == nil || b.dbOriginals {
		return false
	}
	h := b.mem.graph()
	return h != nil && h.Pending() > 0
}

// compactLogBytes is the vector log's size past which a write compacts it
// into the snapshot.
const compactLogBytes = 64 << 20
