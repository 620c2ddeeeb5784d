package kb

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/mixchat/mixchat/pkg/retrieve"
)

// The embedded index's cheaper construction (memHNSW) keeps recall: on a
// fixed set of clustered vectors, past the size where search is exact,
// the graph built on all cores (AddBatch, under -race too) and the one
// built one vector at a time both reach recall@10 0.95 against exact
// search once tuned, within 0.02 of each other.
func TestMemHNSWRecall(t *testing.T) {
	const n, nq, dim = 3000, 100, 48
	rng := rand.New(rand.NewSource(7))
	centres := make([][]float32, 40)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(rng.NormFloat64())
		}
	}
	vec := func() []float32 {
		c := centres[rng.Intn(len(centres))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(rng.NormFloat64())*0.6
		}
		return v
	}
	ids, vecs := make([]string, n), make([][]float32, n)
	for i := range ids {
		ids[i], vecs[i] = fmt.Sprintf("c%d", i), vec()
	}
	queries := make([][]float32, nq)
	for i := range queries {
		queries[i] = vec()
	}
	flat := retrieve.NewFlat(dim)
	for i := range ids {
		flat.Add(ids[i], vecs[i])
	}
	recall := func(h *retrieve.HNSW) float64 {
		found, total := 0, 0
		for _, q := range queries {
			want := map[string]bool{}
			for _, x := range flat.Search(q, 10, nil) {
				want[x.ID] = true
			}
			for _, x := range h.Search(q, 10, nil) {
				if want[x.ID] {
					found++
				}
			}
			total += len(want)
		}
		return float64(found) / float64(total)
	}
	p := memHNSW
	p.ExactBelow = -1
	parallel := retrieve.NewHNSW(dim, p)
	for s := 0; s < n; s += ingestGroup {
		e := min(s+ingestGroup, n)
		if err := parallel.AddBatch(ids[s:e], vecs[s:e]); err != nil {
			t.Fatal(err)
		}
	}
	serial := retrieve.NewHNSW(dim, p)
	for i := range ids {
		if err := serial.Add(ids[i], vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	parallel.Tune()
	serial.Tune()
	rp, rs := recall(parallel), recall(serial)
	t.Logf("recall@10 %.3f built on all cores, %.3f one at a time", rp, rs)
	if rp < 0.95 || rs < 0.95 || rp < rs-0.02 || rs < rp-0.02 {
		t.Errorf("recall@10 %.3f built on all cores, %.3f one at a time: want both ≥ 0.95 and within 0.02", rp, rs)
	}
}
