package kb

import (
	"math"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/text"
)

// This file lifts the relevance of a short chunk that says what the
// question names. A note of one line ("X 是一只三岁的波斯猫") shares few of
// a question's terms with weight ("X 是什么品种的猫？" has 品种, which it
// never says, and the lone character 猫, which it says only inside the word
// 波斯猫, never as a term of its own), and in a base of a few notes every
// term's IDF is small, so the hybrid score of the note that answers falls
// below the threshold. Read term by term, with a lone character of the
// question found inside the chunk's words, the note holds most of what the
// question names, and what it misses is what no chunk of the base holds
// (the question's own way of asking), not what another chunk holds
// (another subject).

// shortChunkRunes is the longest chunk text read for coverage: a note, a
// question–answer pair, a short section. Longer chunks are ranked by the
// hybrid score alone; their bigrams are many enough.
const shortChunkRunes = 120

// unknownWeight is what a question term that no candidate chunk holds
// counts against a chunk that misses it, against 1 for a term another
// candidate holds (it names something else the base knows, which this
// chunk does not say), in a base of n chunks. In a base of a few notes
// most words of a question are said by none of them (its own way of
// asking: 品种, "reasonably"), which tells little, so such a term counts
// half; the more a base holds, the more a term it never says tells that
// the question is about something it lacks (a name no paragraph of a
// thousand mentions), up to a full count at unknownFullAt chunks.
func unknownWeight(n int) float64 {
	if n <= unknownHalfAt {
		return 0.5
	}
	if n >= unknownFullAt {
		return 1
	}
	return 0.5 + 0.5*math.Log(float64(n)/unknownHalfAt)/math.Log(unknownFullAt/unknownHalfAt)
}

const (
	unknownHalfAt = 10
	unknownFullAt = 1000
)

// coverageMid is the coverage at which a short chunk reads as relevance
// 0.5 (the default threshold, kb.score_threshold 1); above it coverage is
// stretched linearly onto [0.5, 1]. Measured with "mixchat-eval qa"
// (CMRC, answerable and left out), "mixchat-eval dstc" and the notes of
// TestChatNotesCoverage; see docs/benchmarks.md ("The default relevance threshold").
const coverageMid = 0.7

// applyCoverage raises the relevance of short chunks by their coverage of
// the question (see coverage) when that reads higher than their hybrid
// score, and re-sorts. The candidates rs are all the chunks retrieval
// found for the question, whatever their relevance: what they hold is what
// the base is known to say about the question's terms; chunks is how many
// chunks the searched bases hold.
func applyCoverage(q string, rs []Result, chunks int) {
	qterms := distinct(lexTerms(stripQuestion(q)))
	if len(qterms) < 2 || len(rs) == 0 {
		return
	}
	sets := make([]map[string]bool, len(rs))
	known := map[string]bool{}
	for i, r := range rs {
		sets[i] = termSet(text.DropPossessives(text.Fold(titleOf(r.File, r.Metadata) + "\n" + r.Text)))
		for _, t := range qterms {
			if sets[i][t] {
				known[t] = true
			}
		}
	}
	lifted, w := false, unknownWeight(chunks)
	for i, r := range rs {
		if utf8.RuneCountInString(r.Text) > shortChunkRunes {
			continue
		}
		if rel := coverageRelevance(coverage(qterms, sets[i], known, w)); rel > r.Relevance {
			rs[i].Relevance, lifted = rel, true
		}
	}
	if lifted {
		sortResults(rs)
	}
}

// coverage is the share of the question's terms a chunk holds: held /
// (held + missed), a missed term counting 1 when another candidate holds
// it and unknown (see unknownWeight) when none does.
func coverage(qterms []string, has, known map[string]bool, unknown float64) float64 {
	var held, missed float64
	for _, t := range qterms {
		switch {
		case has[t]:
			held++
		case known[t]:
			missed++
		default:
			missed += unknown
		}
	}
	if held == 0 {
		return 0
	}
	return held / (held + missed)
}

// coverageRelevance maps a coverage onto relevance: coverageMid reads 0.5,
// full coverage 1, and below coverageMid it lifts nothing (0).
func coverageRelevance(c float64) float64 {
	if c < coverageMid {
		return 0
	}
	return clamp01(0.5 + 0.5*(c-coverageMid)/(1-coverageMid))
}

// termSet is what a chunk holds for coverage: its terms (CJK bigrams,
// Latin words) and its CJK characters, which a question's lone character
// (猫, left between question words) is matched against: the chunk's word
// that holds it (波斯猫) is not a term of the question.
func termSet(s string) map[string]bool {
	ts := text.Terms(s)
	m := make(map[string]bool, 2*len(ts))
	for _, t := range ts {
		m[t] = true
	}
	for _, r := range s {
		if text.IsCJK(r) {
			m[string(r)] = true
		}
	}
	return m
}

func distinct(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
