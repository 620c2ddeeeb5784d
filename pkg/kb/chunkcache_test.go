package kb

import (
	"fmt"
	"testing"
)

func TestChunkCache(t *testing.T) {
	var c chunkCache
	got, missing, gen := c.get([]string{"a", "b"})
	if len(got) != 0 || len(missing) != 2 {
		t.Fatalf("empty cache: %v, missing %v", got, missing)
	}
	c.put(map[string]cachedChunk{"a": newCachedChunk(Chunk{ID: "a", Text: "乾"})}, gen)
	got, missing, _ = c.get([]string{"a", "b"})
	if got["a"].Text != "乾" || len(missing) != 1 || missing[0] != "b" {
		t.Fatalf("after put: %v, missing %v", got, missing)
	}

	// A row read before a removal is not kept: the removal may be its.
	_, _, gen = c.get([]string{"b"})
	c.drop([]string{"a"})
	c.put(map[string]cachedChunk{"b": newCachedChunk(Chunk{ID: "b"})}, gen)
	got, missing, _ = c.get([]string{"a", "b"})
	if len(got) != 0 || len(missing) != 2 {
		t.Fatalf("after a removal: %v, missing %v", got, missing)
	}

	// Bounded.
	for i := range 3 * maxCachedChunks {
		_, _, gen := c.get(nil)
		id := fmt.Sprint(i)
		c.put(map[string]cachedChunk{id: newCachedChunk(Chunk{ID: id})}, gen)
	}
	if n := len(c.rows); n > maxCachedChunks || n == 0 {
		t.Errorf("%d chunks cached, bound %d", n, maxCachedChunks)
	}
}
