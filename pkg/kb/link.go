package kb

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// This file holds the embedded index's background link: an ingestion
// stages its vectors in the graph (stored and searched by a scan at once,
// see retrieve.HNSW.Stage) and returns; linking them into the graph, most
// of an insertion's cost, runs after it, and its end writes the
// snapshots. A base closed before the link is done keeps the staged
// vectors in its vector log, and the next open indexes them from there.

// linkBatch is how many staged vectors the background link takes in under
// one hold of the graph's lock: some 0.1 s of work at 512 dimensions on
// two cores, the longest a search waits for it.
const linkBatch = 256

// linker runs one MemIndex's background link.
type linker struct {
	mu      sync.Mutex
	running bool // a link goroutine is running (its end callback too)
	again   bool // vectors were staged while it ran: link once more
	stopped bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// stage stores vectors of chunks whose payloads it sets, unlinked; the
// write's end (afterWrite) starts the background link, so that it does
// not take the cores from the rest of the write. The caller holds no lock
// of m's.
func (m *MemIndex) stage(ids []string, vecs [][]float32, pay map[string]payload) error {
	m.mu.Lock()
	err := m.vecs.Stage(ids, vecs)
	if err == nil {
		for _, id := range ids {
			m.pay[id] = pay[id]
		}
	}
	m.mu.Unlock()
	return err
}

// linkLater links the staged vectors in the background, unless a link is
// running already (which then goes on to them) or the index is closing;
// m.onLinked runs after each link that took them all in.
func (m *MemIndex) linkLater() {
	l := &m.link
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	if l.running {
		l.again = true
		return
	}
	if g := m.graph(); g == nil || g.Pending() == 0 {
		return
	}
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancel(context.Background())
	}
	l.running = true
	l.wg.Go(func() {
		for {
			g, n := m.graph(), 0
			if g != nil {
				n = g.Pending()
			}
			for g != nil && g.Pending() > 0 {
				if err := g.LinkPending(l.ctx, linkBatch, bulkGC); err != nil {
					l.mu.Lock()
					l.running, l.again = false, false
					l.mu.Unlock()
					return
				}
				if n >= bulkChunks {
					// A large link collects its garbage as it goes, as
					// a bulk ingestion does: the heap then follows the
					// index, where the runtime's pacing alone would let
					// it grow to twice the index.
					runtime.GC()
				}
			}
			if m.onLinked != nil {
				m.onLinked()
			}
			if n >= bulkChunks {
				// Give the link's garbage back now, as a bulk write does.
				debug.FreeOSMemory()
			}
			l.mu.Lock()
			if !l.again || l.stopped {
				l.running, l.again = false, false
				l.mu.Unlock()
				return
			}
			l.again = false
			l.mu.Unlock()
		}
	})
}

// stopLinking stops the background link, leaving what it has not linked
// staged, and waits for it; no link starts after.
func (m *MemIndex) stopLinking() {
	l := &m.link
	l.mu.Lock()
	l.stopped = true
	if l.cancel != nil {
		l.cancel()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// linkRest links what the stopped background link left staged when it is
// little (at most closeLinkMax vectors, under a second's work), so that a
// clean stop after a small upload writes a complete snapshot; more stays
// in the vector log for the next open. m may be nil (a remote store).
func (m *MemIndex) linkRest() {
	if m == nil {
		return
	}
	if g := m.graph(); g != nil {
		if n := g.Pending(); n > 0 && n <= closeLinkMax {
			_ = g.LinkPending(context.Background(), linkBatch, 0)
		}
	}
}

// closeLinkMax is the most staged vectors a close links before it writes
// the snapshots.
const closeLinkMax = 2048

// linking reports the vectors staged and not yet linked, and whether a
// link (or the snapshot that ends it) is under way.
func (m *MemIndex) linking() (pending int, busy bool) {
	if g := m.graph(); g != nil {
		pending = g.Pending()
	}
	m.link.mu.Lock()
	busy = m.link.running
	m.link.mu.Unlock()
	return pending, busy || pending > 0
}

// afterLink ends a background link: the snapshots are written (compact
// decides) now that the graph holds the staged vectors.
func (b *base) afterLink() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_ = b.compact()
}

// addFromLog stages the chunks pay names with their vectors from the
// log's records from offset from on (appended and synced by the caller),
// a batch at a time, and sets their payloads; the background link takes
// them into the graph (link.go). A chunk is found once its batch is
// staged. With gcEvery > 0 it collects garbage every gcEvery vectors.
func (m *MemIndex) addFromLog(ctx context.Context, l *vecLog, from int64, pay map[string]payload, gcEvery int) error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.vecs == nil {
		m.dim = l.dim
		m.vecs = retrieve.NewHNSW(m.dim, memHNSW)
	}
	m.vecs.Reserve(len(pay))
	m.mu.Unlock()
	var ids []string
	var vecs [][]float32
	var buf []float32
	// A batch holds at most the chunks this ingestion adds: a small upload
	// gets a buffer its size, not addBatchSize vectors'.
	batch := min(addBatchSize, max(len(pay), 1))
	added := 0
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		if err := m.stage(ids, vecs, pay); err != nil {
			return err
		}
		if gcEvery > 0 && (added+len(ids))/gcEvery > added/gcEvery {
			runtime.GC()
		}
		added += len(ids)
		ids, vecs = ids[:0], vecs[:0]
		return nil
	}
	_, err := scanVecLogFrom(l.f.Name(), l.epoch, l.dim, from, func(id string, v []float32) error {
		if _, ok := pay[id]; !ok {
			return nil
		}
		// The batch's vectors live in one reused buffer (Stage copies
		// them into the index).
		if buf == nil {
			buf = make([]float32, batch*l.dim)
		}
		i := len(ids)
		dst := buf[i*l.dim : (i+1)*l.dim : (i+1)*l.dim]
		copy(dst, v)
		ids = append(ids, id)
		vecs = append(vecs, dst)
		if len(ids) >= batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return err
}

// stageHeld stages the vectors vecs of the chunks ids (which pay names),
// as addFromLog does with the same vectors read back from the log: an
// ingestion that held them all (one group) need not read them again.
func (m *MemIndex) stageHeld(ids []string, vecs [][]float32, pay map[string]payload) error {
	if len(ids) == 0 {
		return nil
	}
	m.mu.Lock()
	if m.vecs == nil {
		m.dim = len(vecs[0])
		m.vecs = retrieve.NewHNSW(m.dim, memHNSW)
	}
	m.vecs.Reserve(len(pay))
	m.mu.Unlock()
	for s := 0; s < len(ids); s += addBatchSize {
		e := min(s+addBatchSize, len(ids))
		if err := m.stage(ids[s:e], vecs[s:e], pay); err != nil {
			return err
		}
	}
	return nil
}

// addBatchSize is how many vectors an ingestion stages in the embedded
// index at a time.
const addBatchSize = 1024
