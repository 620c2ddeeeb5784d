package main

// The threshold calibration of "mixchat-eval cmrc --threshold D" and
// "mixchat-eval beir --threshold D": instead of ranking quality it measures
// what a knowledge base's relevance threshold lets through. The documents go
// into a real knowledge base with the offline defaults (kb.DefaultConfig,
// the hash embedder, the embedded store) and every question is asked as
// search_docs asks it. Half of the questions are positives (their relevant
// document is in the knowledge base); for the other half the relevant
// documents are left out of it, so anything they get is a false find.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// calibQuery is one question of the calibration: its relevant documents
// and whether they are in the knowledge base.
type calibQuery struct {
	text     string
	rel      map[string]bool // relevant document ids
	positive bool
}

// calibRow is what one relevance threshold lets through.
type calibRow struct {
	MinRelevance float64 `json:"min_relevance"`
	// Distance is the Chatchat score_threshold that maps to MinRelevance.
	Distance float64 `json:"score_threshold"`
	// PassAt3 and PassAt5 are the shares of positive questions with a
	// relevant document among the results of top_k 3 and 5.
	PassAt3 float64 `json:"relevant_passes_at_3"`
	PassAt5 float64 `json:"relevant_passes_at_5"`
	// NegativeFinds is the share of negative questions that get any result.
	NegativeFinds float64 `json:"negative_finds"`
}

// calibResult is what the calibration prints with --json.
type calibResult struct {
	Dataset   string     `json:"dataset"`
	Documents int        `json:"documents"`
	Positives int        `json:"positives"`
	Negatives int        `json:"negatives"`
	Threshold calibRow   `json:"threshold"`
	Sweep     []calibRow `json:"sweep"`
	// Quantiles (10%, 25%, 50%, 75%, 90%) of the best relevant document's
	// relevance for positives and of the first result's for negatives.
	PositiveQuantiles []float64 `json:"positive_relevance_quantiles"`
	NegativeQuantiles []float64 `json:"negative_relevance_quantiles"`
}

// runCalibration indexes docs into an offline knowledge base and reports
// the pass rates at the Chatchat distance threshold and at a sweep of
// relevance thresholds.
func runCalibration(ctx context.Context, dataset string, docs []evalDoc, qs []calibQuery, distance float64, asJSON bool, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "mixchat-calib-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = dir
	kcfg := cfg.KBConfig()
	svc, err := kb.New(kcfg, sqlite.NewKBCatalog(kcfg.Dir), app.NewEmbedder(cfg), nil)
	if err != nil {
		return err
	}
	defer svc.Close()
	const name = "calibration"
	if _, err := svc.Create(ctx, name, kb.CreateOptions{}); err != nil {
		return err
	}
	fileOf := make(map[string]string, len(docs)) // file name → doc id
	const batch = 256
	for lo := 0; lo < len(docs); lo += batch {
		files := make([]kb.FileData, 0, batch)
		for _, d := range docs[lo:min(lo+batch, len(docs))] {
			f := fmt.Sprintf("doc%06d.txt", len(fileOf))
			fileOf[f] = d.id
			files = append(files, kb.FileData{Name: f, Data: []byte(d.text)})
		}
		res, err := svc.AddFiles(ctx, name, files, kb.AddOptions{}, nil)
		if err != nil {
			return fmt.Errorf("index: %w", err)
		}
		for f, err := range res.Failed {
			return fmt.Errorf("index %s (%s): %w", f, fileOf[f], err)
		}
	}

	// Each question's results (top 5, no threshold) decide every row:
	// the results are best first, so a threshold keeps a prefix of them.
	type outcome struct {
		rels     []float64 // relevance of the first 5
		relevant []bool
		positive bool
	}
	outs := make([]outcome, 0, len(qs))
	for _, q := range qs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rs, err := svc.Search(ctx, kb.SearchRequest{Query: q.text, KnowledgeBases: []string{name}, TopK: 5})
		if err != nil {
			return fmt.Errorf("query %q: %w", q.text, err)
		}
		o := outcome{positive: q.positive}
		for _, r := range rs {
			o.rels = append(o.rels, r.Relevance)
			o.relevant = append(o.relevant, q.rel[fileOf[r.File]])
		}
		outs = append(outs, o)
	}
	row := func(minRel float64) calibRow {
		var pos, neg, at3, at5, finds int
		for _, o := range outs {
			if !o.positive {
				neg++
				if len(o.rels) > 0 && o.rels[0] >= minRel {
					finds++
				}
				continue
			}
			pos++
			for i, r := range o.rels {
				if r < minRel {
					break
				}
				if o.relevant[i] {
					if i < 3 {
						at3++
					}
					at5++
					break
				}
			}
		}
		return calibRow{
			MinRelevance: round4(minRel), Distance: round4(kb.RelevanceToDistance(minRel)),
			PassAt3: ratio(at3, pos), PassAt5: ratio(at5, pos), NegativeFinds: ratio(finds, neg),
		}
	}
	res := calibResult{Dataset: dataset, Documents: len(docs), Threshold: row(kb.DistanceToRelevance(distance))}
	res.Threshold.Distance = distance
	for r := 0.30; r < 0.7001; r += 0.05 {
		res.Sweep = append(res.Sweep, row(r))
	}
	var posRel, negRel []float64
	for _, o := range outs {
		if o.positive {
			res.Positives++
			best := 0.0
			for i, r := range o.rels {
				if o.relevant[i] {
					best = r
					break
				}
			}
			posRel = append(posRel, best)
		} else {
			res.Negatives++
			top := 0.0
			if len(o.rels) > 0 {
				top = o.rels[0]
			}
			negRel = append(negRel, top)
		}
	}
	res.PositiveQuantiles, res.NegativeQuantiles = quantiles(posRel), quantiles(negRel)
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "%s threshold calibration (offline knowledge base): %d documents, %d positive and %d negative questions\n",
		res.Dataset, res.Documents, res.Positives, res.Negatives)
	fmt.Fprintf(stdout, "  score_threshold %.3g (relevance ≥ %.3f): relevant passes %.4f at top_k 3, %.4f at top_k 5; negatives finding something %.4f\n",
		distance, res.Threshold.MinRelevance, res.Threshold.PassAt3, res.Threshold.PassAt5, res.Threshold.NegativeFinds)
	fmt.Fprintf(stdout, "  relevance quantiles (10/25/50/75/90%%): relevant %v, negatives' first %v\n", res.PositiveQuantiles, res.NegativeQuantiles)
	fmt.Fprintf(stdout, "  min_relevance  pass@3  pass@5  negative_finds\n")
	for _, r := range res.Sweep {
		fmt.Fprintf(stdout, "  %.2f           %.4f  %.4f  %.4f\n", r.MinRelevance, r.PassAt3, r.PassAt5, r.NegativeFinds)
	}
	return nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round4(float64(a) / float64(b))
}

// quantiles are the 10/25/50/75/90% quantiles of xs (nearest rank).
func quantiles(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var out []float64
	for _, p := range []float64{0.1, 0.25, 0.5, 0.75, 0.9} {
		i := min(len(s)-1, int(p*float64(len(s))))
		out = append(out, round4(s[i]))
	}
	return out
}

// cmrcCalibration splits CMRC: even paragraphs go into the knowledge base,
// and their questions are the positives; the questions of odd paragraphs
// are the negatives.
func cmrcCalibration(paras []evalDoc, paraOf []string, texts []string) ([]evalDoc, []calibQuery) {
	in := map[string]bool{}
	var docs []evalDoc
	for i, p := range paras {
		if i%2 == 0 {
			in[p.id] = true
			docs = append(docs, p)
		}
	}
	qs := make([]calibQuery, len(texts))
	for i, t := range texts {
		qs[i] = calibQuery{text: t, rel: map[string]bool{paraOf[i]: true}, positive: in[paraOf[i]]}
	}
	return docs, qs
}

// beirCalibration splits a BEIR dataset: the relevant documents of every
// other query (in id order) are left out of the knowledge base, making it
// a negative; the rest are positives judged on their documents that remain.
func beirCalibration(docs []evalDoc, queries map[string]string, qrels map[string]map[string]int, qids []string) ([]evalDoc, []calibQuery) {
	out := map[string]bool{}
	for i, id := range qids {
		if i%2 == 1 {
			for d := range qrels[id] {
				out[d] = true
			}
		}
	}
	var kept []evalDoc
	for _, d := range docs {
		if !out[d.id] {
			kept = append(kept, d)
		}
	}
	var qs []calibQuery
	for i, id := range qids {
		q := calibQuery{text: queries[id], rel: map[string]bool{}, positive: i%2 == 0}
		for d := range qrels[id] {
			if !out[d] {
				q.rel[d] = true
			}
		}
		if q.positive && len(q.rel) == 0 {
			continue // all its documents are some negative's
		}
		qs = append(qs, q)
	}
	return kept, qs
}
