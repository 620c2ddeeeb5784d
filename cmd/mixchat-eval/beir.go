package main

// The retrieval benchmarks: "mixchat-eval beir" (BEIR-format data such as
// SciFact: nDCG@10 and recall@100 with trec_eval's definitions) and
// "mixchat-eval cmrc" (CMRC 2018: each question must find its paragraph
// among all paragraphs: recall@1 and recall@5). Both index with the same
// pieces a knowledge base uses: BM25 over text.Terms, the offline
// HashEmbedder with exact cosine search, and retrieve.Hybrid with the
// query's BM25 MaxScore as lexical scale.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mixchat/mixchat/internal/evalqa"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// evalOptions are the retrieval settings shared by the benchmarks.
type evalOptions struct {
	mode   string
	k1, b  float64
	weight float64 // vector share in hybrid
	rrf    int     // RRF constant; 0 = score fusion
	// related seeks each query term's related words too (text.Related),
	// as knowledge bases do.
	related bool
	dim     int
	limit   int
	json    bool
	// threshold, when not negative, runs the threshold calibration
	// (eval_threshold.go) at this Chatchat score_threshold instead.
	threshold float64
}

func (o *evalOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.mode, "mode", "hybrid", "retrieval: bm25, vector (offline hash embedder) or hybrid")
	fs.Float64Var(&o.k1, "k1", 0.9, "BM25 k1")
	fs.Float64Var(&o.b, "b", 0.4, "BM25 b")
	fs.Float64Var(&o.weight, "weight", retrieve.HashVectorWeight, "hybrid: share of the vector relevance (0..1]")
	fs.IntVar(&o.rrf, "rrf", 0, "hybrid: fuse ranks by RRF with this constant instead of scores")
	fs.BoolVar(&o.related, "related", false, "hybrid: seek each query term's related English words too (text.Related), as knowledge bases do")
	fs.IntVar(&o.dim, "dim", retrieve.DefaultEmbedDim, "hash embedder dimension")
	fs.IntVar(&o.limit, "limit", 0, "evaluate only the first N queries (0 = all)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object")
	fs.Float64Var(&o.threshold, "threshold", -1, "calibrate the relevance threshold instead: ask the questions of an offline knowledge base (half of them with their documents left out) and report what this Chatchat score_threshold (distance, 1 = the default) lets through; the retrieval flags above do not apply")
}

func (o *evalOptions) check() error {
	switch o.mode {
	case "bm25", "vector", "hybrid":
	default:
		return fmt.Errorf("unknown --mode %q: use bm25, vector or hybrid", o.mode)
	}
	if o.weight <= 0 || o.weight > 1 {
		return fmt.Errorf("--weight %g: use a value in (0,1]", o.weight)
	}
	if o.dim <= 0 {
		return fmt.Errorf("--dim %d: must be positive", o.dim)
	}
	if o.threshold > 2 || math.IsNaN(o.threshold) {
		return fmt.Errorf("--threshold %g: use a distance in [0,2]", o.threshold)
	}
	return nil
}

// evalDoc is one document to index.
type evalDoc struct {
	id, text string
}

// evalIndex is a BM25 index and an exact vector index over the same
// documents.
type evalIndex struct {
	opt evalOptions
	lex *retrieve.BM25
	vec *retrieve.Flat
	emb *retrieve.HashEmbedder
}

func buildEvalIndex(ctx context.Context, docs []evalDoc, opt evalOptions) (*evalIndex, error) {
	ix := &evalIndex{opt: opt, lex: retrieve.NewBM25(retrieve.BM25Params{K1: opt.k1, B: opt.b})}
	if opt.mode != "vector" {
		for _, d := range docs {
			ix.lex.Add(d.id, text.Terms(d.text))
		}
	}
	if opt.mode == "bm25" {
		return ix, nil
	}
	ix.emb = retrieve.NewHashEmbedder(opt.dim)
	ix.vec = retrieve.NewFlat(opt.dim)
	vecs := make([][]float32, len(docs))
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := len(docs)*w/workers, len(docs)*(w+1)/workers
			texts := make([]string, 0, hi-lo)
			for _, d := range docs[lo:hi] {
				texts = append(texts, d.text)
			}
			vs, err := ix.emb.Embed(ctx, texts)
			copy(vecs[lo:hi], vs)
			errs[w] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("embed documents: %w", err)
	}
	for i, d := range docs {
		if err := ix.vec.Add(d.id, vecs[i]); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// search returns the top k documents for a query, as a knowledge base
// would: each list is searched to depth max(4k, 30) and fused.
func (ix *evalIndex) search(ctx context.Context, query string, k int) ([]retrieve.Hit, error) {
	terms := text.Terms(query)
	if ix.opt.mode == "bm25" {
		return ix.lex.Search(terms, k, nil), nil
	}
	vs, err := ix.emb.Embed(ctx, []string{query})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if ix.opt.mode == "vector" {
		return ix.vec.Search(vs[0], k, nil), nil
	}
	depth := max(4*k, 30)
	lexical := ix.lex.Search(terms, depth, nil)
	if ix.opt.related {
		lexical = ix.lex.SearchClauses(relatedClauses(ix.lex, terms), depth, nil)
	}
	fused := retrieve.Hybrid(lexical, ix.vec.Search(vs[0], depth, nil), retrieve.HybridParams{
		VectorWeight: ix.opt.weight,
		LexicalMax:   ix.lex.MaxScore(terms),
		Depth:        depth,
		RRFK:         ix.opt.rrf,
	})
	return fused[:min(k, len(fused))], nil
}

// beirResult is what "mixchat-eval beir --json" prints.
type beirResult struct {
	Dataset      string  `json:"dataset"`
	Split        string  `json:"split"`
	Mode         string  `json:"mode"`
	Queries      int     `json:"queries"`
	Documents    int     `json:"documents"`
	NDCGAt10     float64 `json:"ndcg_at_10"`
	RecallAt100  float64 `json:"recall_at_100"`
	IndexSeconds float64 `json:"index_seconds"`
	QueryMillis  float64 `json:"query_ms_mean"`
	K1           float64 `json:"k1"`
	B            float64 `json:"b"`
	VectorWeight float64 `json:"vector_weight,omitempty"`
	RRF          int     `json:"rrf,omitempty"`
	Dim          int     `json:"dim,omitempty"`
}

// runEvalBEIR runs "mixchat-eval beir": retrieval quality on a dataset in
// BEIR layout (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).
func runEvalBEIR(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval beir", "", stderr)
	var opt evalOptions
	data := fs.String("data", "", "dataset folder in BEIR layout: corpus.jsonl, queries.jsonl, qrels/ (BEIR SciFact: "+scifactData.source+")")
	split := fs.String("split", "test", "qrels split to evaluate: test, or train for tuning")
	opt.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("eval beir: unexpected argument %q", fs.Arg(0))
	}
	if *data == "" {
		return fmt.Errorf("eval beir: %w", scifactData.required())
	}
	if err := opt.check(); err != nil {
		return fmt.Errorf("eval beir: %w", err)
	}
	if err := scifactData.check(*data, "corpus.jsonl", "queries.jsonl", filepath.Join("qrels", *split+".tsv")); err != nil {
		return fmt.Errorf("eval beir: %w", err)
	}
	docs, queries, qrels, err := loadBEIR(*data, *split)
	if err != nil {
		return fmt.Errorf("eval beir: %w", err)
	}
	start := time.Now()
	ix, err := buildEvalIndex(ctx, docs, opt)
	if err != nil {
		return fmt.Errorf("eval beir: %w", err)
	}
	indexTime := time.Since(start)

	qids := make([]string, 0, len(qrels))
	for id := range qrels {
		if _, ok := queries[id]; ok {
			qids = append(qids, id)
		}
	}
	sortIDs(qids)
	if len(qids) == 0 {
		return fmt.Errorf("eval beir: no query of qrels/%s.tsv is in queries.jsonl", *split)
	}
	if opt.limit > 0 && opt.limit < len(qids) {
		qids = qids[:opt.limit]
	}
	if opt.threshold >= 0 {
		kept, qs := beirCalibration(docs, queries, qrels, qids)
		return runCalibration(ctx, filepath.Base(filepath.Clean(*data)), kept, qs, opt.threshold, opt.json, stdout)
	}
	var ndcg, recall float64
	start = time.Now()
	for _, qid := range qids {
		if err := ctx.Err(); err != nil {
			return err
		}
		hits, err := ix.search(ctx, queries[qid], 101)
		if err != nil {
			return fmt.Errorf("eval beir: query %s: %w", qid, err)
		}
		ranked := make([]string, 0, 100)
		for _, h := range hits {
			if h.ID != qid { // BEIR ignores the query's own document
				ranked = append(ranked, h.ID)
			}
		}
		ndcg += ndcgAt(ranked, qrels[qid], 10)
		recall += recallAt(ranked, qrels[qid], 100)
	}
	queryTime := time.Since(start)
	n := float64(len(qids))
	res := beirResult{
		Dataset: filepath.Base(filepath.Clean(*data)), Split: *split, Mode: opt.mode,
		Queries: len(qids), Documents: len(docs),
		NDCGAt10: round4(ndcg / n), RecallAt100: round4(recall / n),
		IndexSeconds: round4(indexTime.Seconds()), QueryMillis: round4(float64(queryTime.Microseconds()) / 1000 / n),
		K1: opt.k1, B: opt.b,
	}
	if opt.mode != "bm25" {
		res.Dim = opt.dim
	}
	if opt.mode == "hybrid" {
		res.VectorWeight, res.RRF = opt.weight, opt.rrf
	}
	if opt.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%s (%s split), %s retrieval: %d queries over %d documents\n", res.Dataset, res.Split, res.Mode, res.Queries, res.Documents)
	fmt.Fprintf(stdout, "  nDCG@10     %.4f\n  recall@100  %.4f\n", res.NDCGAt10, res.RecallAt100)
	fmt.Fprintf(stdout, "  index %.2fs, %.2f ms per query\n", res.IndexSeconds, res.QueryMillis)
	return nil
}

// loadBEIR reads a BEIR dataset: documents (title and text joined, as BEIR
// indexes them), queries by id and the graded relevance of split.
func loadBEIR(dir, split string) ([]evalDoc, map[string]string, map[string]map[string]int, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, nil, nil, fmt.Errorf("--data: %w", err)
	} else if !st.IsDir() {
		return nil, nil, nil, fmt.Errorf("--data %s: not a folder", dir)
	}
	var docs []evalDoc
	err := readJSONL(filepath.Join(dir, "corpus.jsonl"), func(line []byte) error {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		docs = append(docs, evalDoc{id: d.ID, text: strings.TrimSpace(d.Title + " " + d.Text)})
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	queries := map[string]string{}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		queries[q.ID] = q.Text
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	qrels, err := readQrels(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, nil, nil, err
	}
	if len(docs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no documents", filepath.Join(dir, "corpus.jsonl"))
	}
	return docs, queries, qrels, nil
}

func readJSONL(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readQrels reads query-id, corpus-id, score lines (a header line is
// skipped); only positive scores count as relevant.
func readQrels(path string) (map[string]map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want query-id, corpus-id, score", path, n)
		}
		rel, err := strconv.Atoi(fields[2])
		if err != nil {
			if n == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s:%d: score: %w", path, n, err)
		}
		if rel <= 0 {
			continue
		}
		if out[fields[0]] == nil {
			out[fields[0]] = map[string]int{}
		}
		out[fields[0]][fields[1]] = rel
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// ndcgAt is trec_eval's ndcg_cut: gain = relevance grade, discount
// log2(rank+1), normalised by the ideal ordering of the judged documents.
func ndcgAt(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked[:min(k, len(ranked))] {
		dcg += float64(rel[id]) / math.Log2(float64(i)+2)
	}
	grades := make([]int, 0, len(rel))
	for _, g := range rel {
		grades = append(grades, g)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(grades)))
	var ideal float64
	for i, g := range grades[:min(k, len(grades))] {
		ideal += float64(g) / math.Log2(float64(i)+2)
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// recallAt is the share of relevant documents in the first k.
func recallAt(ranked []string, rel map[string]int, k int) float64 {
	if len(rel) == 0 {
		return 0
	}
	found := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(len(rel))
}

// sortIDs sorts ids numerically when they are numbers, else as strings.
func sortIDs(ids []string) {
	sort.Slice(ids, func(i, j int) bool {
		a, ea := strconv.Atoi(ids[i])
		b, eb := strconv.Atoi(ids[j])
		if ea == nil && eb == nil {
			return a < b
		}
		return ids[i] < ids[j]
	})
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// cmrcResult is what "mixchat-eval cmrc --json" prints.
type cmrcResult struct {
	Mode         string  `json:"mode"`
	Queries      int     `json:"queries"`
	Paragraphs   int     `json:"paragraphs"`
	RecallAt1    float64 `json:"recall_at_1"`
	RecallAt5    float64 `json:"recall_at_5"`
	IndexSeconds float64 `json:"index_seconds"`
	QueryMillis  float64 `json:"query_ms_mean"`
	VectorWeight float64 `json:"vector_weight,omitempty"`
	Dim          int     `json:"dim,omitempty"`
}

// runEvalCMRC runs "mixchat-eval cmrc": every CMRC 2018 question must
// retrieve its own paragraph among all paragraphs of the file.
func runEvalCMRC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := evalFlags("eval cmrc", "", stderr)
	var opt evalOptions
	data := fs.String("data", "", "CMRC 2018 file in SQuAD format ("+cmrcData.source+")")
	opt.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("eval cmrc: unexpected argument %q", fs.Arg(0))
	}
	if *data == "" {
		return fmt.Errorf("eval cmrc: %w", cmrcData.required())
	}
	if err := opt.check(); err != nil {
		return fmt.Errorf("eval cmrc: %w", err)
	}
	if err := cmrcData.check(*data); err != nil {
		return fmt.Errorf("eval cmrc: %w", err)
	}
	raw, err := os.ReadFile(*data)
	if err != nil {
		return fmt.Errorf("eval cmrc: --data: %w", err)
	}
	var squad evalqa.SQuAD
	if err := json.Unmarshal(raw, &squad); err != nil {
		return fmt.Errorf("eval cmrc: %s: not SQuAD-format JSON: %w", *data, err)
	}
	type question struct{ text, para string }
	var docs []evalDoc
	var qs []question
	for _, a := range squad.Data {
		for _, p := range a.Paragraphs {
			id := p.ID
			if id == "" {
				id = strconv.Itoa(len(docs))
			}
			docs = append(docs, evalDoc{id: id, text: p.Context})
			for _, q := range p.QAs {
				qs = append(qs, question{q.Question, id})
			}
		}
	}
	if len(docs) == 0 || len(qs) == 0 {
		return fmt.Errorf("eval cmrc: %s: no paragraphs with questions", *data)
	}
	if opt.limit > 0 && opt.limit < len(qs) {
		qs = qs[:opt.limit]
	}
	if opt.threshold >= 0 {
		texts, paraOf := make([]string, len(qs)), make([]string, len(qs))
		for i, q := range qs {
			texts[i], paraOf[i] = q.text, q.para
		}
		kept, cqs := cmrcCalibration(docs, paraOf, texts)
		return runCalibration(ctx, "CMRC 2018", kept, cqs, opt.threshold, opt.json, stdout)
	}
	start := time.Now()
	ix, err := buildEvalIndex(ctx, docs, opt)
	if err != nil {
		return fmt.Errorf("eval cmrc: %w", err)
	}
	indexTime := time.Since(start)
	var at1, at5 int
	start = time.Now()
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return err
		}
		hits, err := ix.search(ctx, q.text, 5)
		if err != nil {
			return fmt.Errorf("eval cmrc: %w", err)
		}
		for i, h := range hits {
			if h.ID == q.para {
				if i == 0 {
					at1++
				}
				at5++
				break
			}
		}
	}
	queryTime := time.Since(start)
	n := float64(len(qs))
	res := cmrcResult{
		Mode: opt.mode, Queries: len(qs), Paragraphs: len(docs),
		RecallAt1: round4(float64(at1) / n), RecallAt5: round4(float64(at5) / n),
		IndexSeconds: round4(indexTime.Seconds()), QueryMillis: round4(float64(queryTime.Microseconds()) / 1000 / n),
	}
	if opt.mode != "bm25" {
		res.Dim = opt.dim
	}
	if opt.mode == "hybrid" {
		res.VectorWeight = opt.weight
	}
	if opt.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "CMRC 2018, %s retrieval: %d questions over %d paragraphs\n", res.Mode, res.Queries, res.Paragraphs)
	fmt.Fprintf(stdout, "  recall@1  %.4f\n  recall@5  %.4f\n", res.RecallAt1, res.RecallAt5)
	fmt.Fprintf(stdout, "  index %.2fs, %.2f ms per query\n", res.IndexSeconds, res.QueryMillis)
	return nil
}

// relatedClauses is the query of terms with each term's related words
// (text.Related) counted at 0.55 in its clause, those commoner than it
// left out: the knowledge bases' expansion (pkg/kb relatedForms).
func relatedClauses(lex *retrieve.BM25, terms []string) []retrieve.Clause {
	qtf := map[string]int{}
	var order []string
	for _, t := range terms {
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	n := float64(lex.Len())
	maxIDF := math.Log(1 + (n+0.5)/0.5)
	idf := func(t string) float64 {
		if w := lex.MaxScore([]string{t}); w != 0 {
			return w
		}
		return maxIDF
	}
	out := make([]retrieve.Clause, 0, len(order))
	for _, t := range order {
		w := idf(t)
		forms := []retrieve.Form{{Terms: []string{t}, Weight: 1}}
		for _, r := range text.Related(t) {
			if idf(r) >= w {
				forms = append(forms, retrieve.Form{Terms: []string{r}, Weight: 0.55})
			}
		}
		out = append(out, retrieve.Clause{Count: qtf[t], IDF: w, Forms: forms})
	}
	return out
}
