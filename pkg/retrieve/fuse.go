package retrieve

import "math"

// RRF fuses ranked lists by reciprocal rank fusion (Cormack et al., 2009):
// a document scores Σ 1/(k + rank) over the lists it appears in, rank
// counting from 1. k is 60 when not positive. The scores are raw RRF
// scores (at most len(lists)/(k+1)); Hybrid offers a normalised variant.
func RRF(k int, lists ...[]Hit) []Hit {
	if k <= 0 {
		k = 60
	}
	score := make(map[string]float64)
	for _, l := range lists {
		seen := make(map[string]bool, len(l))
		for r, h := range l {
			if seen[h.ID] { // a list naming a document twice counts its best rank
				continue
			}
			seen[h.ID] = true
			score[h.ID] += 1 / float64(k+r+1)
		}
	}
	out := make([]Hit, 0, len(score))
	for id, s := range score {
		out = append(out, Hit{ID: id, Score: s})
	}
	sortHits(out)
	return out
}

// CosineToRelevance maps a cosine similarity onto the relevance scale of
// Hybrid: the similarity itself, clamped to [0,1]. Orthogonal or opposite
// vectors carry no relevance (0), identical directions full relevance (1);
// in between the scale is linear, so a threshold on relevance is a threshold
// on cosine.
func CosineToRelevance(cos float64) float64 {
	switch {
	case math.IsNaN(cos) || cos <= 0:
		return 0
	case cos >= 1:
		return 1
	}
	return cos
}

// DistanceToCosine converts the Euclidean distance d between two unit
// vectors (in [0,2]) into their cosine similarity: 1 − d²/2.
func DistanceToCosine(d float64) float64 { return 1 - d*d/2 }

// CosineToDistance converts a cosine similarity of two unit vectors into
// their Euclidean distance: √(2 − 2·cos), in [0,2].
func CosineToDistance(cos float64) float64 {
	x := 2 - 2*cos
	if x <= 0 {
		return 0
	}
	if x >= 4 {
		return 2
	}
	return math.Sqrt(x)
}

// HybridParams tune Hybrid. The zero value is the default: a convex
// combination with equal weights, lexical scores normalised by the best
// lexical score of the list.
type HybridParams struct {
	// VectorWeight is the share of the vector relevance in the fused score,
	// in (0,1]; the lexical share is 1 − VectorWeight. Zero means 0.5.
	VectorWeight float64
	// LexicalMax, when positive, is the score a perfect lexical match would
	// have (BM25.MaxScore of the query): lexical relevance is then
	// score/LexicalMax, an absolute scale. When zero, lexical relevance is
	// score divided by the best score in the lexical list, so the best
	// lexical hit has relevance 1.
	LexicalMax float64
	// Depth is the number of hits each list was asked for (k of the
	// searches). A list that came back full was cut there, so a document
	// missing from it is credited the relevance of its last entry rather
	// than 0. Zero means the lists are complete: missing documents get 0.
	Depth int
	// RRFK, when positive, selects rank fusion instead of score fusion: the
	// fused score is the weighted RRF score with constant RRFK divided by its
	// maximum (first in both lists), which is again in [0,1].
	RRFK int
}

// Hybrid fuses a lexical list (raw BM25 scores) and a vector list (cosine
// similarities) into one list, best first, whose Score is a relevance in
// [0,1]:
//
//	relevance = w·CosineToRelevance(cos) + (1 − w)·lexical relevance
//
// with w = p.VectorWeight and the lexical relevance as p.LexicalMax says.
// A document absent from one list gets 0 from it, or, when the list was cut
// at p.Depth, the relevance of that list's last entry (it ranked below it,
// so that is an upper bound). The score is 1 only for a document that is a
// perfect match in both lists, and near 0 for one that barely matches
// either; a threshold on it keeps the same meaning whatever store the
// vectors come from. With p.RRFK set the score is normalised reciprocal rank
// fusion instead, which depends on ranks only.
func Hybrid(lexical, vector []Hit, p HybridParams) []Hit {
	w := p.VectorWeight
	if w <= 0 {
		w = 0.5
	}
	if w > 1 {
		w = 1
	}
	// One entry per document, in one map: the lists are short (a search's
	// depth), and a map for each list and another for the sums cost more
	// than the fusion.
	f := newFusion(len(lexical) + len(vector))
	nLex, nVec := 0, 0
	for _, h := range lexical {
		if e := f.entry(h.ID); !e.inLex {
			e.inLex, e.lex, e.lexRank = true, h.Score, nLex
			nLex++
		}
	}
	for _, h := range vector {
		if e := f.entry(h.ID); !e.inVec {
			e.inVec, e.vec, e.vecRank = true, h.Score, nVec
			nVec++
		}
	}
	out := make([]Hit, len(f.ents))
	if p.RRFK > 0 {
		k := float64(p.RRFK)
		for i, e := range f.ents {
			s := 0.0
			if e.inLex {
				s += (1 - w) / (k + float64(e.lexRank) + 1)
			}
			if e.inVec {
				s += w / (k + float64(e.vecRank) + 1)
			}
			s *= k + 1 // the maximum is 1/(k+1)
			out[i] = Hit{ID: e.id, Score: math.Min(math.Max(s, 0), 1)}
		}
		sortHits(out)
		return out
	}
	norm := p.LexicalMax
	if norm <= 0 {
		for _, h := range lexical {
			norm = math.Max(norm, h.Score)
		}
	}
	for i := range f.ents {
		e := &f.ents[i]
		if e.inLex {
			if norm > 0 && e.lex > 0 {
				e.lex = math.Min(e.lex/norm, 1)
			} else {
				e.lex = 0
			}
		}
		if e.inVec {
			e.vec = CosineToRelevance(e.vec)
		}
	}
	// A document missing from a list that was cut at p.Depth ranked
	// below its last entry: it is credited that entry's relevance, an
	// upper bound, so the cut does not punish what it cut. A shorter
	// list is complete, and what it misses scores 0.
	var minLex, minVec float64
	if p.Depth > 0 && nLex >= p.Depth {
		minLex = f.min(func(e *fusionEntry) (float64, bool) { return e.lex, e.inLex })
	}
	if p.Depth > 0 && nVec >= p.Depth {
		minVec = f.min(func(e *fusionEntry) (float64, bool) { return e.vec, e.inVec })
	}
	for i, e := range f.ents {
		var s float64
		switch {
		case e.inLex && e.inVec:
			s = (1-w)*e.lex + w*e.vec
		case e.inLex:
			s = (1-w)*e.lex + w*minVec
		default:
			s = (1-w)*minLex + w*e.vec
		}
		out[i] = Hit{ID: e.id, Score: math.Min(math.Max(s, 0), 1)}
	}
	sortHits(out)
	return out
}

// fusion holds the documents of the lists Hybrid fuses, each once, with
// its first (best) entry in each list.
type fusion struct {
	at   map[string]int
	ents []fusionEntry
}

// fusionEntry is one document: its score and rank in each list it is in
// (a relevance once Hybrid has converted them).
type fusionEntry struct {
	id               string
	lex, vec         float64
	lexRank, vecRank int
	inLex, inVec     bool
}

func newFusion(n int) *fusion {
	return &fusion{at: make(map[string]int, n), ents: make([]fusionEntry, 0, n)}
}

// entry returns the document's entry, made when it has none.
func (f *fusion) entry(id string) *fusionEntry {
	i, ok := f.at[id]
	if !ok {
		i = len(f.ents)
		f.at[id] = i
		f.ents = append(f.ents, fusionEntry{id: id})
	}
	return &f.ents[i]
}

// min is the smallest of the values get gives for the entries it says are
// in the list, 0 when there are none.
func (f *fusion) min(get func(*fusionEntry) (float64, bool)) float64 {
	first := true
	var lo float64
	for i := range f.ents {
		x, ok := get(&f.ents[i])
		if ok && (first || x < lo) {
			lo, first = x, false
		}
	}
	return lo
}
