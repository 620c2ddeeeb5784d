package retrieve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand"
	"strconv"
	"sync"
	"testing"
)

// smallSet is n clustered vectors of dimension dim with held-out queries.
func smallSet(n, nq, dim int) (ids []string, vecs, queries [][]float32) {
	rng := rand.New(rand.NewSource(5))
	centres := randomVecs(rng, max(n/50, 4), dim)
	all := clusteredVecs(rng, centres, n+nq, 1.0)
	ids = make([]string, n)
	for i := range ids {
		ids[i] = "v" + strconv.Itoa(i)
	}
	return ids, all[:n], all[n:]
}

func exactTruth(ids []string, vecs, queries [][]float32, allow func(string) bool) [][]string {
	f := NewFlat(len(vecs[0]))
	for i, v := range vecs {
		f.Add(ids[i], v)
	}
	out := make([][]string, len(queries))
	for i, q := range queries {
		for _, h := range f.Search(q, 10, allow) {
			out[i] = append(out[i], h.ID)
		}
	}
	return out
}

func hnswRecall(h *HNSW, truth [][]string, queries [][]float32, allow func(string) bool) float64 {
	got := make([][]Hit, len(queries))
	for i, q := range queries {
		got[i] = h.Search(q, 10, allow)
	}
	return recallAt(truth, got)
}

func TestHNSWRecall(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 100, 32)
	truth := exactTruth(ids, vecs, queries, nil)
	for _, tc := range []struct {
		name  string
		build func(h *HNSW)
	}{
		{"AddBatch", func(h *HNSW) {
			if err := h.AddBatch(ids, vecs); err != nil {
				t.Fatal(err)
			}
		}},
		{"Stage+LinkPending", func(h *HNSW) {
			for s := 0; s < len(ids); s += 400 {
				e := min(s+400, len(ids))
				if err := h.Stage(ids[s:e], vecs[s:e]); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.LinkPending(context.Background(), 256, 0); err != nil {
				t.Fatal(err)
			}
			if n := h.Pending(); n != 0 {
				t.Fatalf("Pending = %d after LinkPending", n)
			}
		}},
		{"Add", func(h *HNSW) {
			for i := range ids {
				if err := h.Add(ids[i], vecs[i]); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHNSW(32, HNSWParams{ExactBelow: -1, EfConstruction: 64})
			tc.build(h)
			if h.Len() != len(ids) {
				t.Fatalf("Len = %d", h.Len())
			}
			if r := hnswRecall(h, truth, queries, nil); r < 0.95 {
				t.Errorf("recall@10 = %.3f, want ≥ 0.95", r)
			}
			// A stored vector finds itself first.
			for i := 0; i < 50; i++ {
				if got := h.Search(vecs[i], 1, nil); len(got) != 1 || got[0].ID != ids[i] {
					t.Fatalf("vector %s finds %v", ids[i], got)
				}
			}
		})
	}
}

func TestHNSWExactWhenSmall(t *testing.T) {
	ids, vecs, queries := smallSet(300, 20, 16)
	h := NewHNSW(16, HNSWParams{}) // default ExactBelow covers 300
	f := NewFlat(16)
	for i := range ids {
		h.Add(ids[i], vecs[i])
		f.Add(ids[i], vecs[i])
	}
	for _, q := range queries {
		sameHits(t, "small index", h.Search(q, 10, nil), f.Search(q, 10, nil))
	}
}

func TestHNSWRemoveReplaceFilter(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 50, 24)
	h := NewHNSW(24, HNSWParams{ExactBelow: -1, EfConstruction: 64})
	if err := h.AddBatch(ids, vecs); err != nil {
		t.Fatal(err)
	}
	if err := h.Add("bad", make([]float32, 3)); err == nil {
		t.Error("wrong dimension accepted")
	}
	if err := h.AddBatch([]string{"x"}, [][]float32{make([]float32, 3)}); err == nil {
		t.Error("wrong dimension accepted in batch")
	}
	// Remove every third vector: removed ids never come back and recall
	// over the rest holds.
	removed := map[string]bool{}
	for i := 0; i < len(ids); i += 3 {
		h.Remove(ids[i])
		removed[ids[i]] = true
	}
	var liveIDs []string
	var liveVecs [][]float32
	for i := range ids {
		if !removed[ids[i]] {
			liveIDs = append(liveIDs, ids[i])
			liveVecs = append(liveVecs, vecs[i])
		}
	}
	if h.Len() != len(liveIDs) {
		t.Fatalf("Len = %d, want %d", h.Len(), len(liveIDs))
	}
	for _, q := range queries {
		for _, hit := range h.Search(q, 10, nil) {
			if removed[hit.ID] {
				t.Fatalf("removed %s returned", hit.ID)
			}
		}
	}
	if r := hnswRecall(h, exactTruth(liveIDs, liveVecs, queries, nil), queries, nil); r < 0.95 {
		t.Errorf("recall after removals = %.3f", r)
	}
	// Replacing moves a vector.
	h.Add(liveIDs[0], queries[0])
	if got := h.Search(queries[0], 1, nil); got[0].ID != liveIDs[0] {
		t.Errorf("replaced vector not found: %v", got)
	}
	if h.Len() != len(liveIDs) {
		t.Errorf("Len after replace = %d", h.Len())
	}
	// Filters: a broad one walks the graph, a narrow one falls back to an
	// exact scan; both return only allowed ids with good recall.
	for _, mod := range []int{2, 97} {
		// (liveIDs[0], moved above, is left out of both.)
		allow := func(id string) bool { n, _ := strconv.Atoi(id[1:]); return n%mod == 1 && id != liveIDs[0] }
		truth := exactTruth(liveIDs[1:], liveVecs[1:], queries[1:], allow)
		for _, q := range queries[1:] {
			for _, hit := range h.Search(q, 10, allow) {
				if !allow(hit.ID) {
					t.Fatalf("filter let %s through", hit.ID)
				}
			}
		}
		if r := hnswRecall(h, truth, queries[1:], allow); r < 0.95 {
			t.Errorf("recall with 1/%d filter = %.3f", mod, r)
		}
	}
}

func TestHNSWRebuildAfterMassRemoval(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 30, 16)
	h := NewHNSW(16, HNSWParams{ExactBelow: -1, EfConstruction: 64})
	h.AddBatch(ids, vecs)
	for _, id := range ids[:1100] {
		h.Remove(id)
	}
	if h.ndel > len(h.ids)/2 {
		t.Errorf("%d removed nodes of %d kept: no rebuild", h.ndel, len(h.ids))
	}
	if h.Len() != 400 {
		t.Fatalf("Len = %d", h.Len())
	}
	truth := exactTruth(ids[1100:], vecs[1100:], queries, nil)
	if r := hnswRecall(h, truth, queries, nil); r < 0.95 {
		t.Errorf("recall after rebuild = %.3f", r)
	}
}

func TestHNSWRoundTrip(t *testing.T) {
	ids, vecs, queries := smallSet(1000, 30, 24)
	h := NewHNSW(24, HNSWParams{ExactBelow: -1, M: 8, EfSearch: 40, EfConstruction: 40})
	h.AddBatch(ids, vecs)
	h.Remove(ids[5])
	g, data := roundTrip(t, h, ReadHNSW)
	if g.Params() != h.Params() || g.Len() != h.Len() || g.Dim() != 24 {
		t.Fatalf("read %+v len %d, want %+v len %d", g.Params(), g.Len(), h.Params(), h.Len())
	}
	for _, q := range queries {
		sameHits(t, "restored graph", g.Search(q, 10, nil), h.Search(q, 10, nil))
	}
	// The restored graph accepts more vectors.
	if err := g.Add("extra", queries[0]); err != nil {
		t.Fatal(err)
	}
	if got := g.Search(queries[0], 1, nil); got[0].ID != "extra" {
		t.Errorf("added after restore: %v", got)
	}
	// Empty indexes round-trip too.
	var eb bytes.Buffer
	NewHNSW(8, HNSWParams{}).WriteTo(&eb)
	if e, err := ReadHNSW(&eb); err != nil || e.Len() != 0 {
		t.Errorf("empty round trip: %v, %v", e, err)
	}
	// Corrupt input fails cleanly instead of panicking.
	for _, bad := range [][]byte{nil, []byte("garbage"), data[:len(data)/3], data[:len(data)-1]} {
		if _, err := ReadHNSW(bytes.NewReader(bad)); err == nil {
			t.Errorf("ReadHNSW(%d bytes) succeeded", len(bad))
		}
	}
	flipped := bytes.Clone(data)
	for i := len(flipped) - 400; i < len(flipped); i += 4 { // links point past the end
		flipped[i+3] = 0x7f
	}
	if _, err := ReadHNSW(bytes.NewReader(flipped)); !errors.Is(err, ErrFormat) {
		t.Errorf("bad links: %v, want ErrFormat", err)
	}
}

func TestHNSWConcurrent(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 20, 16)
	h := NewHNSW(16, HNSWParams{ExactBelow: 100, EfConstruction: 40})
	h.AddBatch(ids[:500], vecs[:500])
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		h.AddBatch(ids[500:1000], vecs[500:1000])
	}()
	go func() {
		defer wg.Done()
		for i := 1000; i < 1500; i++ {
			h.Add(ids[i], vecs[i])
			if i%5 == 0 {
				h.Remove(ids[i-1000])
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 300; i++ {
			if got := h.Search(queries[i%len(queries)], 5, nil); len(got) == 0 {
				t.Error("no hits")
				return
			}
		}
	}()
	wg.Wait()
	if h.Len() != 1400 {
		t.Errorf("Len = %d, want 1400", h.Len())
	}
}

func TestHNSWTune(t *testing.T) {
	// Clustered data: the graph reaches the target with a short list, and
	// held-out queries see about the recall tuning measured.
	ids, vecs, queries := smallSet(3000, 100, 32)
	h := NewHNSW(32, HNSWParams{ExactBelow: -1, EfConstruction: 64})
	h.AddBatch(ids, vecs)
	ef := h.EfSearch()
	if ef == 0 || ef > 256 {
		t.Errorf("tuned list size %d on clustered data, want a graph search", ef)
	}
	if r := hnswRecall(h, exactTruth(ids, vecs, queries, nil), queries, nil); r < 0.93 {
		t.Errorf("held-out recall@10 %.3f with tuned ef %d", r, ef)
	}
	if ef2, r := h.Tune(); ef2 != ef || r < h.Params().TargetRecall {
		t.Errorf("Tune() = %d, %.3f; the automatic tuning chose %d", ef2, r, ef)
	}

	// Uniform random vectors in many dimensions: no graph beats a scan at
	// the target, so searches become exact.
	rng := rand.New(rand.NewSource(9))
	rv := randomVecs(rng, 2100, 256)
	rids := make([]string, 2000)
	for i := range rids {
		rids[i] = strconv.Itoa(i)
	}
	r := NewHNSW(256, HNSWParams{ExactBelow: -1, EfConstruction: 32, M: 8})
	for i, id := range rids { // one by one: a deterministic graph
		r.Add(id, rv[i])
	}
	if ef := r.EfSearch(); ef != 0 {
		t.Errorf("random data: tuned list size %d, want exact search (0)", ef)
	}
	if rec := hnswRecall(r, exactTruth(rids, rv[:2000], rv[2000:], nil), rv[2000:], nil); rec != 1 {
		t.Errorf("exact mode recall %.3f", rec)
	}
	// A fixed EfSearch is kept.
	r.SetEfSearch(40)
	r.AddBatch([]string{"x"}, rv[2000:2001])
	if ef := r.EfSearch(); ef != 40 {
		t.Errorf("fixed EfSearch became %d", ef)
	}
}

func TestHNSWRebuildAfterReplacements(t *testing.T) {
	ids, vecs, queries := smallSet(1200, 30, 16)
	h := NewHNSW(16, HNSWParams{ExactBelow: -1, EfConstruction: 48})
	for round := 0; round < 3; round++ { // re-ingesting the same vectors leaves tombstones
		if err := h.AddBatch(ids, vecs); err != nil {
			t.Fatal(err)
		}
	}
	if h.Len() != len(ids) {
		t.Fatalf("Len = %d", h.Len())
	}
	if len(h.ids) >= 3*len(ids) {
		t.Errorf("%d nodes for %d live vectors: replaced nodes never dropped", len(h.ids), len(ids))
	}
	if r := hnswRecall(h, exactTruth(ids, vecs, queries, nil), queries, nil); r < 0.95 {
		t.Errorf("recall after rebuild = %.3f", r)
	}
}

// roundTrip writes x with WriteTo, checks the count of bytes written, and
// reads it back with read. It returns what it read and the bytes.
func roundTrip[T io.WriterTo](t *testing.T, x T, read func(io.Reader) (T, error)) (T, []byte) {
	t.Helper()
	var buf bytes.Buffer
	n, err := x.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; buffer has %d", n, err, buf.Len())
	}
	y, err := read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return y, buf.Bytes()
}

// TestHNSWReserve: after Reserve(n), adding n vectors in batches does not
// move the arrays; Has and IDs follow adds and removals.
func TestHNSWReserve(t *testing.T) {
	ids, vecs, queries := smallSet(3000, 20, 32)
	h := NewHNSW(32, HNSWParams{ExactBelow: -1})
	h.Reserve(len(ids))
	first := cap(h.vecs)
	for start := 0; start < len(ids); start += 500 {
		end := min(start+500, len(ids))
		if err := h.AddBatch(ids[start:end], vecs[start:end]); err != nil {
			t.Fatal(err)
		}
	}
	if cap(h.vecs) != first || first != len(ids)*32 {
		t.Errorf("vector array capacity %d after reserving %d and adding in batches (first %d)", cap(h.vecs), len(ids)*32, first)
	}
	if r := hnswRecall(h, exactTruth(ids, vecs, queries, nil), queries, nil); r < 0.9 {
		t.Errorf("recall@10 %.3f", r)
	}
	h.Remove("v7")
	if h.Has("v7") || !h.Has("v8") || len(h.IDs()) != len(ids)-1 {
		t.Errorf("Has(v7) %v, Has(v8) %v, %d ids", h.Has("v7"), h.Has("v8"), len(h.IDs()))
	}
	b := NewBM25(BM25Params{})
	b.Add("a", []string{"x", "y"})
	b.Add("b", []string{"x"})
	b.Remove("a")
	if b.Has("a") || !b.Has("b") || len(b.IDs()) != 1 {
		t.Errorf("BM25: Has(a) %v, Has(b) %v, ids %v", b.Has("a"), b.Has("b"), b.IDs())
	}
}

// An index saved with int8 vectors reads back a quarter of the vectors'
// size, each vector within half a step of its original, with the same
// graph and about the recall of the float32 one against exact search
// (0.988 against 0.999 on these tight clusters).
func TestHNSWInt8RoundTrip(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 100, 64)
	truth := exactTruth(ids, vecs, queries, nil)
	h := NewHNSW(64, HNSWParams{ExactBelow: -1, EfConstruction: 64, EfSearch: 64})
	if err := h.AddBatch(ids, vecs); err != nil {
		t.Fatal(err)
	}
	var f32, i8 bytes.Buffer
	if _, err := h.WriteTo(&f32); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Encoded(Int8).WriteTo(&i8); err != nil {
		t.Fatal(err)
	}
	if saved := f32.Len() - i8.Len(); saved < 1500*(64*3-4) {
		t.Errorf("int8 file %d bytes, float32 %d: want 3 bytes a dimension less", i8.Len(), f32.Len())
	}
	g, err := ReadHNSW(&i8)
	if err != nil {
		t.Fatal(err)
	}
	for n := range ids {
		v, w := h.vec(uint32(n)), g.vec(uint32(n))
		var m float32
		for _, x := range v {
			m = max(m, abs32(x))
		}
		for i := range v {
			if d := abs32(v[i] - w[i]); d > m/254*1.001 {
				t.Fatalf("vector %d dimension %d: %g read back as %g", n, i, v[i], w[i])
			}
		}
	}
	r32, r8 := hnswRecall(h, truth, queries, nil), hnswRecall(g, truth, queries, nil)
	if r8 < r32-0.02 {
		t.Errorf("recall@10 %.3f with int8 vectors, %.3f with float32", r8, r32)
	}
	// A zero vector stays zero.
	codes := make([]byte, 4)
	if s := encodeInt8(codes, make([]float32, 4)); s != 0 {
		t.Errorf("zero vector scale %g", s)
	}
}

// TestHNSWStaged: staged vectors are found (by a scan merged with the
// graph's hits) before they are linked, removed and replaced like others,
// and kept out of a snapshot until LinkPending has linked them; a cancelled
// LinkPending leaves them staged.
func TestHNSWStaged(t *testing.T) {
	ids, vecs, queries := smallSet(1500, 50, 24)
	h := NewHNSW(24, HNSWParams{ExactBelow: -1, EfConstruction: 64})
	if err := h.AddBatch(ids[:700], vecs[:700]); err != nil {
		t.Fatal(err)
	}
	if err := h.Stage(ids[700:], vecs[700:]); err != nil {
		t.Fatal(err)
	}
	if err := h.Stage([]string{"x"}, [][]float32{make([]float32, 3)}); err == nil {
		t.Error("Stage took a vector of the wrong dimension")
	}
	if got := h.Pending(); got != 800 {
		t.Fatalf("Pending = %d, want 800", got)
	}
	if h.Len() != 1500 {
		t.Fatalf("Len = %d, want 1500", h.Len())
	}
	truth := exactTruth(ids, vecs, queries, nil)
	if r := hnswRecall(h, truth, queries, nil); r < 0.95 {
		t.Errorf("recall@10 with 800 staged = %.3f, want ≥ 0.95", r)
	}
	for _, i := range []int{0, 699, 700, 1200, 1499} {
		if got := h.Search(vecs[i], 1, nil); len(got) != 1 || got[0].ID != ids[i] {
			t.Errorf("vector %s finds %v", ids[i], got)
		}
	}
	// A filter reaches the staged vectors too.
	only := func(id string) bool { return id == ids[1300] }
	if got := h.Search(vecs[1300], 3, only); len(got) != 1 || got[0].ID != ids[1300] {
		t.Errorf("filtered search for a staged vector = %v", got)
	}
	// Removed and replaced while staged.
	h.Remove(ids[1000])
	if got := h.Search(vecs[1000], 1, nil); len(got) == 1 && got[0].ID == ids[1000] {
		t.Error("a removed staged vector is still found")
	}
	if err := h.Stage([]string{ids[1001]}, [][]float32{vecs[5]}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteTo(io.Discard); !errors.Is(err, ErrStaged) {
		t.Errorf("WriteTo with staged vectors: %v, want ErrStaged", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.LinkPending(ctx, 100, 0); !errors.Is(err, context.Canceled) || h.Pending() == 0 {
		t.Errorf("cancelled LinkPending: %v, %d pending", err, h.Pending())
	}
	// Searches run while the graph links the rest.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 200; i++ {
			if got := h.Search(queries[i%len(queries)], 5, nil); len(got) != 5 {
				t.Errorf("search during linking: %d hits", len(got))
				return
			}
		}
	})
	if err := h.LinkPending(context.Background(), 100, 300); err != nil {
		t.Fatal(err)
	}
	if n := h.Pending(); n < 400 || n > 600 {
		t.Errorf("LinkPending with a limit of 300 left %d of 801 staged", n)
	}
	if err := h.LinkPending(context.Background(), 100, 0); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if h.Pending() != 0 {
		t.Fatalf("Pending = %d after LinkPending", h.Pending())
	}
	got, _ := roundTrip(t, h, ReadHNSW)
	for _, i := range []int{0, 700, 1200} {
		if r := got.Search(vecs[i], 1, nil); len(r) != 1 || r[0].ID != ids[i] {
			t.Errorf("read back: vector %s finds %v", ids[i], r)
		}
	}
	if r := got.Search(vecs[5], 2, nil); len(r) != 2 {
		t.Errorf("replaced staged vector: %v", r)
	}
	if r := got.Search(vecs[1000], 1, nil); len(r) == 1 && r[0].ID == ids[1000] {
		t.Error("read back: a removed staged vector is found")
	}
	// Add links whatever is staged before it.
	h2 := NewHNSW(24, HNSWParams{ExactBelow: -1})
	h2.Stage(ids[:300], vecs[:300])
	if err := h2.Add(ids[300], vecs[300]); err != nil {
		t.Fatal(err)
	}
	if h2.Pending() != 0 {
		t.Errorf("Add left %d staged", h2.Pending())
	}
}
