package retrieve

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/text"
)

// TestSciFactQuality indexes the SciFact abstracts and checks nDCG@10 on
// the first 50 test queries for BM25 alone and for the offline hybrid, as a
// knowledge base would search (each list to depth 40, fused).
func TestSciFactQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 5,183 abstracts")
	}
	if raceEnabled {
		t.Skip("indexing 5,183 abstracts takes minutes under the race detector and runs on one goroutine; run without -race")
	}
	dir := shareddata.Path(t, "scifact")
	var ids, texts []string
	readLines(t, filepath.Join(dir, "corpus.jsonl"), func(line string) {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
		texts = append(texts, d.Title+" "+d.Text)
	})
	queries := map[string]string{}
	readLines(t, filepath.Join(dir, "queries.jsonl"), func(line string) {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		json.Unmarshal([]byte(line), &q)
		queries[q.ID] = q.Text
	})
	qrels := map[string]map[string]bool{}
	readLines(t, filepath.Join(dir, "qrels", "test.tsv"), func(line string) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] == "score" || f[2] == "0" {
			return
		}
		if qrels[f[0]] == nil {
			qrels[f[0]] = map[string]bool{}
		}
		qrels[f[0]][f[1]] = true
	})
	qids := make([]string, 0, len(qrels))
	for id := range qrels {
		qids = append(qids, id)
	}
	sort.Slice(qids, func(i, j int) bool { a, _ := strconv.Atoi(qids[i]); b, _ := strconv.Atoi(qids[j]); return a < b })
	qids = qids[:50]

	bm := NewBM25(BM25Params{})
	for i := range ids {
		bm.Add(ids[i], text.Terms(texts[i]))
	}
	emb := NewHashEmbedder(0)
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	flat := NewFlat(emb.Dim())
	for i := range ids {
		flat.Add(ids[i], vecs[i])
	}
	ndcg := func(hits []Hit, rel map[string]bool) float64 {
		var dcg, ideal float64
		for i, h := range hits[:min(10, len(hits))] {
			if rel[h.ID] {
				dcg += 1 / math.Log2(float64(i)+2)
			}
		}
		for i := 0; i < min(10, len(rel)); i++ {
			ideal += 1 / math.Log2(float64(i)+2)
		}
		return dcg / ideal
	}
	var lexN, hybN, vecN float64
	for _, q := range qids {
		terms := text.Terms(queries[q])
		lex := bm.Search(terms, 40, nil)
		qv, _ := emb.Embed(context.Background(), []string{queries[q]})
		vec := flat.Search(qv[0], 40, nil)
		hyb := Hybrid(lex, vec, HybridParams{VectorWeight: emb.VectorWeight(), LexicalMax: bm.MaxScore(terms)})
		lexN += ndcg(lex, qrels[q])
		vecN += ndcg(vec, qrels[q])
		hybN += ndcg(hyb, qrels[q])
	}
	n := float64(len(qids))
	t.Logf("first 50 SciFact test queries: nDCG@10 bm25 %.4f, vector %.4f, hybrid %.4f", lexN/n, vecN/n, hybN/n)
	for _, c := range []struct {
		name       string
		got, floor float64
	}{{"bm25", lexN / n, 0.60}, {"vector", vecN / n, 0.40}, {"hybrid", hybN / n, 0.60}} {
		if c.got < c.floor {
			t.Errorf("%s nDCG@10 = %.4f, below the floor %.2f", c.name, c.got, c.floor)
		}
	}
}

func readLines(t testing.TB, path string, fn func(string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fn(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkBM25SciFact times BM25 top-10 queries over the 5,183 SciFact
// abstracts (the claims of queries.jsonl, cycled).
func BenchmarkBM25SciFact(b *testing.B) {
	dir := shareddata.Path(b, "scifact")
	bm := NewBM25(BM25Params{})
	var queries [][]string
	f, err := os.Open(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		json.Unmarshal(sc.Bytes(), &d)
		bm.Add(d.ID, text.Terms(d.Title+" "+d.Text))
	}
	f.Close()
	qf, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	sc = bufio.NewScanner(qf)
	for sc.Scan() {
		var q struct{ Text string }
		json.Unmarshal(sc.Bytes(), &q)
		queries = append(queries, text.Terms(q.Text))
	}
	qf.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bm.Search(queries[i%len(queries)], 10, nil)
	}
}
