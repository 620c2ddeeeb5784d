package retrieve

// This file holds staged insertion: vectors stored at once and searched by
// a scan, linked into the graph later (Stage, LinkPending).

import (
	"context"
	"fmt"
)

// Stage stores vectors (ids[i] ↦ vecs[i], replacing those of the same ids)
// without linking them into the graph, which is most of an insertion's
// cost: searches find them by an exact scan until LinkPending links them.
// An ingestion stages its vectors and returns; the graph catches up in the
// background. It checks every dimension before storing anything.
func (h *HNSW) Stage(ids []string, vecs [][]float32) error {
	if err := h.check(ids, vecs); err != nil {
		return fmt.Errorf("hnsw stage: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grow(len(ids), false)
	for i := range ids {
		h.place(ids[i], vecs[i])
	}
	return nil
}

// Pending returns the number of staged vectors not yet linked into the
// graph (removed ones included).
func (h *HNSW) Pending() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.ids) - h.linked
}

// LinkPending links the staged vectors into the graph, batch vectors at a
// time under the write lock (searches run between batches), and retunes
// the search list when none is left. With limit > 0 it links at most
// limit of them (about: whole batches). It stops early, leaving the rest
// staged, when ctx is done.
func (h *HNSW) LinkPending(ctx context.Context, batch, limit int) error {
	batch = max(batch, 1)
	for done := 0; limit <= 0 || done < limit; done += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		h.mu.Lock()
		if h.linked >= len(h.ids) {
			h.maybeRebuild()
			h.maybeTune()
			h.mu.Unlock()
			return nil
		}
		end := min(h.linked+batch, len(h.ids))
		h.linkNodes(h.unlinkedTo(end))
		h.linked = end
		h.mu.Unlock()
	}
	return nil
}

// unlinked returns the live nodes not yet in the graph.
func (h *HNSW) unlinked() []uint32 { return h.unlinkedTo(len(h.ids)) }

// unlinkedTo returns the live nodes from h.linked up to end.
func (h *HNSW) unlinkedTo(end int) []uint32 {
	nodes := make([]uint32, 0, end-h.linked)
	for n := h.linked; n < end; n++ {
		if !h.deleted[n] {
			nodes = append(nodes, uint32(n))
		}
	}
	return nodes
}
