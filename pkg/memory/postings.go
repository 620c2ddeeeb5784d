package memory

import "math"

// postings is an append-only inverted index scored with Lucene's BM25,
// exactly as retrieve.BM25 scores with its default parameters:
//
//	score(d, q) = Σ_{t ∈ q} qtf(t) · idf(t) · tf / (tf + K1·(1 − B + B·|d|/avgdl))
//	idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// A conversation only grows, so its documents (messages, or sessions) are
// numbered in order and each term's postings are in that order: the
// latest documents holding a term are at the end of its list, and a search
// can read a term's latest postings and stop (score). Adding a document,
// or terms to the latest one, costs its terms only.
type postings struct {
	terms map[string]*termPostings
	lens  []int32 // by document: its number of terms
	total int64   // Σ lens
}

type termPostings struct {
	docs []int32 // ascending
	tfs  []int32
}

// BM25's free parameters, retrieve.BM25's defaults.
const (
	bm25K1 = 0.9
	bm25B  = 0.4
)

func newPostings() *postings { return &postings{terms: map[string]*termPostings{}} }

// len returns the number of documents.
func (p *postings) len() int { return len(p.lens) }

// extend adds terms to document doc, which is either the latest document
// or the next one (then added, possibly without terms).
func (p *postings) extend(doc int, terms []string) {
	for len(p.lens) <= doc {
		p.lens = append(p.lens, 0)
	}
	d := int32(doc)
	for _, t := range terms {
		tp := p.terms[t]
		if tp == nil {
			tp = &termPostings{}
			p.terms[t] = tp
		}
		if n := len(tp.docs); n > 0 && tp.docs[n-1] == d {
			tp.tfs[n-1]++
		} else {
			tp.docs = append(tp.docs, d)
			tp.tfs = append(tp.tfs, 1)
		}
	}
	p.lens[doc] += int32(len(terms))
	p.total += int64(len(terms))
}

// score adds the BM25 score of every document holding a query term: a
// document from lo on to win[doc-lo] (win has a slot for each), an older
// one to arch, reading at most scan of each term's postings older than lo
// (the latest first); arch may be nil when scan is 0. The terms are
// counted as retrieve.BM25.Search counts them (a repeated term weighs
// more) and added to each document in the order of their first
// appearance, so that from lo = 0 the scores are exactly
// retrieve.BM25's.
func (p *postings) score(query []string, lo int, win []float64, scan int, arch *sparse) {
	n := len(p.lens)
	if n == 0 || len(query) == 0 {
		return
	}
	avgdl := float64(p.total) / float64(n)
	if avgdl == 0 {
		avgdl = 1
	}
	order, qtf := distinctTerms(query)
	for _, t := range order {
		tp := p.terms[t]
		if tp == nil {
			continue
		}
		df := float64(len(tp.docs))
		w := float64(qtf[t]) * math.Log(1+(float64(n)-df+0.5)/(df+0.5))
		older := 0
		for i := len(tp.docs) - 1; i >= 0; i-- {
			d := tp.docs[i]
			if int(d) < lo {
				if older == scan {
					break
				}
				older++
			}
			tf := float64(tp.tfs[i])
			norm := bm25K1 * (1 - bm25B + bm25B*float64(p.lens[d])/avgdl)
			if int(d) >= lo {
				win[int(d)-lo] += w * tf / (tf + norm)
			} else {
				arch.add(d, w*tf/(tf+norm))
			}
		}
	}
}

// distinctTerms returns the distinct terms of a query in order of
// appearance and how often each occurs.
func distinctTerms(query []string) ([]string, map[string]int) {
	qtf := make(map[string]int, len(query))
	var order []string
	for _, t := range query {
		if qtf[t] == 0 {
			order = append(order, t)
		}
		qtf[t]++
	}
	return order, qtf
}

// sparse holds scores of a few of many documents: val by document (zero
// for those not scored), touched lists the scored ones.
type sparse struct {
	val     []float64
	touched []int32
}

// reset makes s empty with room for n documents.
func (s *sparse) reset(n int) {
	for _, d := range s.touched {
		s.val[d] = 0
	}
	s.touched = s.touched[:0]
	if len(s.val) < n {
		s.val = make([]float64, n+n/4)
	}
}

// add adds v (positive) to document d's score.
func (s *sparse) add(d int32, v float64) {
	if s.val[d] == 0 {
		s.touched = append(s.touched, d)
	}
	s.val[d] += v
}
