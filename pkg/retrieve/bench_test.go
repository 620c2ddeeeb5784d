package retrieve

import (
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Benchmarks of the vector indexes. The 100k benchmarks build their index
// once per process (tens of seconds on 2 cores; the build time is reported
// by BenchmarkHNSWBuild). The 1M ones are opt-in: set MIXCHAT_BENCH_1M=1
// (the build takes several minutes and ~2 GB).
//
//	go test -run '^$' -bench 'HNSW|Flat' -benchtime 500x -timeout 1h ./pkg/retrieve/
//	MIXCHAT_BENCH_1M=1 go test -run '^$' -bench '1M' -benchtime 200x -timeout 3h ./pkg/retrieve/

const benchDim = 384

// dataset is a set of unit vectors with held-out queries and their exact
// top-10 neighbours.
type dataset struct {
	ids     []string
	vecs    [][]float32
	queries [][]float32
	truth   [][]string // exact top-10 ids per query
}

// randomVecs draws n vectors uniformly on the unit sphere: the worst case
// for an approximate index, since no direction is special.
func randomVecs(rng *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		Normalize(v)
		out[i] = v
	}
	return out
}

// clusteredVecs draws n vectors around a number of random centres (Gaussian
// clusters), closer to real text embeddings, whose similar texts form
// groups. spread is the per-coordinate noise relative to the centre's
// length: 1.0 gives points about 45° from their centre.
func clusteredVecs(rng *rand.Rand, centres [][]float32, n int, spread float64) [][]float32 {
	dim := len(centres[0])
	sigma := spread / math.Sqrt(float64(dim))
	out := make([][]float32, n)
	for i := range out {
		c := centres[rng.Intn(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(sigma*rng.NormFloat64())
		}
		Normalize(v)
		out[i] = v
	}
	return out
}

func makeDataset(kind string, n, nq int) *dataset {
	rng := rand.New(rand.NewSource(42))
	var all [][]float32
	switch kind {
	case "random":
		all = randomVecs(rng, n+nq, benchDim)
	case "clustered":
		centres := randomVecs(rng, max(n/100, 10), benchDim)
		all = clusteredVecs(rng, centres, n+nq, 1.0)
	default:
		panic(kind)
	}
	ds := &dataset{vecs: all[:n], queries: all[n:]}
	ds.ids = make([]string, n)
	for i := range ds.ids {
		ds.ids[i] = strconv.Itoa(i)
	}
	f := NewFlat(benchDim)
	for i, v := range ds.vecs {
		f.Add(ds.ids[i], v)
	}
	ds.truth = make([][]string, nq)
	for i, q := range ds.queries {
		for _, h := range f.Search(q, 10, nil) {
			ds.truth[i] = append(ds.truth[i], h.ID)
		}
	}
	return ds
}

var benchCache struct {
	sync.Mutex
	data  map[string]*dataset
	index map[string]*HNSW
	build map[string]time.Duration
}

func benchData(b *testing.B, kind string, n int) *dataset {
	benchCache.Lock()
	defer benchCache.Unlock()
	key := fmt.Sprint(kind, n)
	if ds := benchCache.data[key]; ds != nil {
		return ds
	}
	if benchCache.data == nil {
		benchCache.data = make(map[string]*dataset)
		benchCache.index = make(map[string]*HNSW)
		benchCache.build = make(map[string]time.Duration)
	}
	nq := 200
	if n >= 1_000_000 {
		nq = 100
	}
	ds := makeDataset(kind, n, nq)
	benchCache.data[key] = ds
	return ds
}

func benchIndex(b *testing.B, kind string, n int, p HNSWParams) (*dataset, *HNSW) {
	ds := benchData(b, kind, n)
	benchCache.Lock()
	defer benchCache.Unlock()
	key := fmt.Sprint(kind, n, p)
	if h := benchCache.index[key]; h != nil {
		return ds, h
	}
	h := NewHNSW(benchDim, p)
	start := time.Now()
	if err := h.AddBatch(ds.ids, ds.vecs); err != nil {
		b.Fatal(err)
	}
	benchCache.build[key] = time.Since(start)
	benchCache.index[key] = h
	return ds, h
}

func opt1M(b *testing.B) {
	if os.Getenv("MIXCHAT_BENCH_1M") == "" {
		b.Skip("set MIXCHAT_BENCH_1M=1 to run the 1M-vector benchmarks (several minutes to build)")
	}
}

// benchSearch times single-query searches cycling through the held-out
// queries and reports recall@10 against exact search and the number of
// vectors compared per query (the cost that does not depend on how busy
// the machine is).
func benchSearch(b *testing.B, ds *dataset, search func(q []float32) ([]Hit, int)) {
	got := make([][]Hit, len(ds.queries))
	var cost int
	for i, q := range ds.queries {
		var c int
		got[i], c = search(q)
		cost += c
	}
	recall := recallAt(ds.truth, got)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		search(ds.queries[i%len(ds.queries)])
	}
	// After ResetTimer, which drops metrics.
	b.ReportMetric(recall, "recall@10")
	b.ReportMetric(float64(cost)/float64(len(ds.queries)), "dists/op")
}

// benchHNSW runs the search benchmarks of one data set: first with the
// automatically tuned list size ("auto"; its metric ef is the size chosen,
// 0 meaning exact search), then with fixed sizes to show the trade-off.
// The index is built once, by AddBatch on all cores; its build time and
// insert rate are reported as metrics too.
func benchHNSW(b *testing.B, kind string, n int, name string) {
	b.Run(fmt.Sprintf("%s/%s/auto", kind, name), func(b *testing.B) {
		ds, h := benchIndex(b, kind, n, HNSWParams{})
		h.SetEfSearch(0)
		h.Tune()
		benchSearch(b, ds, func(q []float32) ([]Hit, int) { return h.search(q, 10, nil) })
		b.ReportMetric(float64(h.EfSearch()), "ef")
		build := benchCache.build[fmt.Sprint(kind, n, HNSWParams{})]
		b.ReportMetric(build.Seconds(), "build-s")
		b.ReportMetric(float64(n)/build.Seconds(), "inserts/s")
	})
	for _, ef := range []int{16, 32, 64, 128, 256, 1024} {
		b.Run(fmt.Sprintf("%s/%s/ef=%d", kind, name, ef), func(b *testing.B) {
			ds, h := benchIndex(b, kind, n, HNSWParams{})
			h.SetEfSearch(ef)
			benchSearch(b, ds, func(q []float32) ([]Hit, int) { return h.search(q, 10, nil) })
		})
	}
}

func BenchmarkHNSWSearch(b *testing.B) {
	benchHNSW(b, "clustered", 100_000, "100k")
	benchHNSW(b, "random", 100_000, "100k")
}

// BenchmarkHNSWSearch1M is opt-in (MIXCHAT_BENCH_1M=1) and uses clustered
// data only: on uniform random data the tuned index answers by exact scan
// (see BenchmarkHNSWSearch/random), which BenchmarkFlatSearch1M measures.
func BenchmarkHNSWSearch1M(b *testing.B) {
	opt1M(b)
	benchHNSW(b, "clustered", 1_000_000, "1M")
}

func BenchmarkFlatSearch(b *testing.B) {
	for _, kind := range []string{"random", "clustered"} {
		b.Run(kind+"/100k", func(b *testing.B) {
			ds := benchData(b, kind, 100_000)
			f := NewFlat(benchDim)
			for i, v := range ds.vecs {
				f.Add(ds.ids[i], v)
			}
			benchSearch(b, ds, func(q []float32) ([]Hit, int) { return f.Search(q, 10, nil), len(ds.vecs) })
		})
	}
}

func BenchmarkFlatSearch1M(b *testing.B) {
	opt1M(b)
	ds := benchData(b, "random", 1_000_000)
	f := NewFlat(benchDim)
	for i, v := range ds.vecs {
		f.Add(ds.ids[i], v)
	}
	benchSearch(b, ds, func(q []float32) ([]Hit, int) { return f.Search(q, 10, nil), len(ds.vecs) })
}

// BenchmarkHNSWBuild reports the insert rate of AddBatch (all cores) on a
// fresh index of 20k vectors; one op is one build. The 100k and 1M builds
// report theirs in BenchmarkHNSWSearch.
func BenchmarkHNSWBuild(b *testing.B) {
	for _, kind := range []string{"clustered", "random"} {
		b.Run(kind+"/20k", func(b *testing.B) {
			ds := benchData(b, kind, 20_000)
			b.ResetTimer()
			var total time.Duration
			for i := 0; i < b.N; i++ {
				h := NewHNSW(benchDim, HNSWParams{EfSearch: 64}) // fixed: no tuning in the figure
				start := time.Now()
				if err := h.AddBatch(ds.ids, ds.vecs); err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
			}
			b.ReportMetric(float64(len(ds.ids)*b.N)/total.Seconds(), "inserts/s")
		})
	}
}

// BenchmarkBM25WriteTo writes the snapshot of an index of 2,000 documents
// of 400 distinct terms each (a knowledge base of a few hundred pages).
func BenchmarkBM25WriteTo(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	idx := NewBM25(BM25Params{})
	for d := range 2000 {
		terms := make([]string, 400)
		for i := range terms {
			terms[i] = "t" + strconv.Itoa(r.Intn(20000))
		}
		idx.Add("doc-"+strconv.Itoa(d), terms)
	}
	var n int64
	for b.Loop() {
		m, err := idx.WriteTo(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		n = m
	}
	b.SetBytes(n)
}

// BenchmarkBM25SearchClauses searches 2,000 documents that all hold the
// query's subject term (one knowledge base about one thing) with clauses
// of one-term and two-term forms.
func BenchmarkBM25SearchClauses(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	idx := NewBM25(BM25Params{})
	for d := range 2000 {
		terms := []string{"subject", "subject"}
		for range 60 {
			terms = append(terms, "t"+strconv.Itoa(r.Intn(300)))
		}
		idx.Add("doc-"+strconv.Itoa(d), terms)
	}
	q := []Clause{
		{IDF: 0.1, Forms: []Form{{Terms: []string{"subject"}, Weight: 1}, {Terms: []string{"subject", "t1"}, Weight: 0.5}}},
		{IDF: 2, Forms: []Form{{Terms: []string{"t2"}, Weight: 1}, {Terms: []string{"t3", "t4"}, Weight: 1}}},
		{IDF: 2, Forms: []Form{{Terms: []string{"t5"}, Weight: 1}}},
	}
	for b.Loop() {
		idx.SearchClauses(q, 20, nil)
	}
}
