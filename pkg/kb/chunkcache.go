package kb

import (
	"context"
	"sync"
)

// maxCachedChunks bounds a knowledge base's chunk cache.
const maxCachedChunks = 4096

// cachedChunk is a chunk with its section path (titleOf), which every
// search result is given.
type cachedChunk struct {
	Chunk
	path string
}

func newCachedChunk(c Chunk) cachedChunk { return cachedChunk{c, titleOf(c.File, c.Metadata)} }

// chunkCache keeps the chunk rows searches read, with their section
// paths, for the searches that follow: the hits of the same and similar questions are read once, not
// parsed from SQLite each time. A chunk's id is derived from all it holds
// (its knowledge base, its file and the file's hash, its place, text and
// metadata), so a cached row is never stale, only gone: every removal from
// the base's indexes (lexRemove) drops it. The zero value is empty; when
// full, a quarter of it is dropped.
type chunkCache struct {
	mu sync.Mutex
	// gen counts removals: rows read before one are not kept, as the
	// removal may have come between the read and the put.
	gen  uint64
	rows map[string]cachedChunk
}

// get returns the cached chunks of ids, the ids not cached, and the
// generation to put what is read for those with.
func (c *chunkCache) get(ids []string) (map[string]cachedChunk, []string, uint64) {
	out := make(map[string]cachedChunk, len(ids))
	var missing []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if ch, ok := c.rows[id]; ok {
			out[id] = ch
		} else {
			missing = append(missing, id)
		}
	}
	return out, missing, c.gen
}

// put caches rows read at generation gen, unless a removal came since.
func (c *chunkCache) put(rows map[string]cachedChunk, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || len(rows) == 0 {
		return
	}
	if c.rows == nil {
		c.rows = make(map[string]cachedChunk, len(rows))
	}
	if len(c.rows)+len(rows) > maxCachedChunks {
		drop := len(c.rows) + len(rows) - maxCachedChunks*3/4
		for id := range c.rows {
			if drop <= 0 {
				break
			}
			delete(c.rows, id)
			drop--
		}
	}
	for id, ch := range rows {
		c.rows[id] = ch
	}
}

// drop forgets the chunks of ids (removed from the knowledge base).
func (c *chunkCache) drop(ids []string) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		delete(c.rows, id)
	}
}

// chunks returns the chunks of b with the given ids (those that exist),
// with their section paths, from the cache or else from the database. The
// chunks' metadata maps are shared: callers copy before changing them
// (search does, withPath).
func (b *base) chunks(ctx context.Context, ids []string) (map[string]cachedChunk, error) {
	out, missing, gen := b.chunkCache.get(ids)
	if len(missing) == 0 {
		return out, nil
	}
	read, err := chunksByID(ctx, b.db, missing)
	if err != nil {
		return nil, err
	}
	rows := make(map[string]cachedChunk, len(read))
	for id, ch := range read {
		rows[id] = newCachedChunk(ch)
		out[id] = rows[id]
	}
	b.chunkCache.put(rows, gen)
	return out, nil
}
