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
	score := make(map[string]float64, len(lexical)+len(vector))
	if p.RRFK > 0 {
		k := float64(p.RRFK)
		for r, h := range dedupe(lexical) {
			score[h.ID] += (1 - w) / (k + float64(r) + 1)
		}
		for r, h := range dedupe(vector) {
			score[h.ID] += w / (k + float64(r) + 1)
		}
		for id := range score {
			score[id] *= k + 1 // the maximum is 1/(k+1)
		}
	} else {
		norm := p.LexicalMax
		if norm <= 0 {
			for _, h := range lexical {
				norm = math.Max(norm, h.Score)
			}
		}
		lex := make(map[string]float64, len(lexical))
		for _, h := range dedupe(lexical) {
			if norm > 0 && h.Score > 0 {
				lex[h.ID] = math.Min(h.Score/norm, 1)
			} else {
				lex[h.ID] = 0
			}
		}
		vec := make(map[string]float64, len(vector))
		for _, h := range dedupe(vector) {
			vec[h.ID] = CosineToRelevance(h.Score)
		}
		// A document missing from a list that was cut at p.Depth ranked
		// below its last entry: it is credited that entry's relevance, an
		// upper bound, so the cut does not punish what it cut. A shorter
		// list is complete, and what it misses scores 0.
		var minLex, minVec float64
		if p.Depth > 0 && len(lex) >= p.Depth {
			minLex = listMin(lex)
		}
		if p.Depth > 0 && len(vec) >= p.Depth {
			minVec = listMin(vec)
		}
		for id, r := range lex {
			v, ok := vec[id]
			if !ok {
				v = minVec
			}
			score[id] = (1-w)*r + w*v
		}
		for id, v := range vec {
			if _, ok := lex[id]; !ok {
				score[id] = (1-w)*minLex + w*v
			}
		}
	}
	out := make([]Hit, 0, len(score))
	for id, s := range score {
		out = append(out, Hit{ID: id, Score: math.Min(math.Max(s, 0), 1)})
	}
	sortHits(out)
	return out
}

// listMin is the smallest value of m, 0 when m is empty.
func listMin(m map[string]float64) float64 {
	first := true
	var lo float64
	for _, x := range m {
		if first || x < lo {
			lo, first = x, false
		}
	}
	return lo
}

// dedupe drops repeated ids, keeping the first (best) occurrence.
func dedupe(l []Hit) []Hit {
	seen := make(map[string]bool, len(l))
	out := l[:0:0]
	for _, h := range l {
		if !seen[h.ID] {
			seen[h.ID] = true
			out = append(out, h)
		}
	}
	return out
}
