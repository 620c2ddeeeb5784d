package kb

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/text"
)

// This file ranks the chunks of the document a question names by what the
// question asks of it. "Is the Birch Court quiet?" names a document
// (its title holds "Birch Court") and asks one thing of it ("quiet").
// Every chunk of that document holds the name, in its title field and often
// in its text, so the hybrid score ranks first the chunks that repeat the
// name most (its short question–answer pairs, its opening line), not the
// one that says "the place was quiet". Within the named document the name
// tells the chunks nothing apart: they are ranked again by the question's
// other terms alone (not the words that make it a question), sought among
// all the document's chunks, and take the document's places in the list in
// that order. The document's relevances
// are kept (the same values, given in the new order), so how relevant the
// named document is, and so the threshold's verdict, do not change; only
// which of its chunks fill its places does.

// subjectShare is the least share of a document title's terms a question
// must hold to name that document.
const subjectShare = 0.5

// fileTitleTerms are the terms of a document's title as a question names
// the document: lexTerms of its title (titleOf), possessives dropped.
func fileTitleTerms(file string) []string {
	return lexTerms(text.DropPossessives(titleOf(file, nil)))
}

// maxTitleTerms bounds the titleTermsCache.
const maxTitleTerms = 16384

// titleTermsCache keeps fileTitleTerms of the documents searches find, a
// function of the file name alone, so it is never stale: the ranking of
// every search's results reads it for each document among them. When
// full, it is emptied. The zero value is empty.
type titleTermsCache struct {
	m sync.Map // file name → []string, shared: callers do not change it
	n atomic.Int64
}

// get is fileTitleTerms(file), cached.
func (c *titleTermsCache) get(file string) []string {
	if v, ok := c.m.Load(file); ok {
		return v.([]string)
	}
	ts := fileTitleTerms(file)
	if c.n.Add(1) > maxTitleTerms {
		c.m.Clear()
		c.n.Store(0)
	}
	c.m.Store(file, ts)
	return ts
}

// namedDocument returns the file of the first result whose document title
// the question names (holds at least subjectShare of its terms), the
// question's terms that title holds, and the others; "" when no result's
// title is named or the question asks nothing besides the name. titleTerms
// gives a file's fileTitleTerms.
func namedDocument(qterms []string, rs []Result, titleTerms func(string) []string) (file string, rest []string) {
	seen := map[string]bool{}
	for _, r := range rs {
		if r.File == "" || seen[r.File] || r.Match != "" {
			continue
		}
		seen[r.File] = true
		title := distinct(titleTerms(r.File))
		if len(title) == 0 {
			continue
		}
		inTitle := make(map[string]bool, len(title))
		for _, t := range title {
			inTitle[t] = true
		}
		held := 0
		rest = rest[:0]
		for _, t := range qterms {
			if inTitle[t] {
				held++
			} else {
				rest = append(rest, t)
			}
		}
		if held == 0 || float64(held) < subjectShare*float64(len(title)) {
			continue
		}
		if len(rest) == 0 {
			return "", nil
		}
		return r.File, rest
	}
	return "", nil
}

// rankNamedDocument reorders, in rs (one base's results, best first), the
// chunks of the document the question q names by the question's other
// terms (see the top of this file), and returns the new list.
func (s *Service) rankNamedDocument(ctx context.Context, b *base, q string, rs []Result) ([]Result, error) {
	qterms := distinct(lexTerms(stripQuestion(q)))
	file, rest := namedDocument(qterms, rs, s.titleTerms.get)
	// The words that make it a question ("do", "you", "know") ask nothing
	// of the document: counted, they rank first its question–answer pairs
	// worded like the question ("Do you have …?"), whatever they are about.
	rest = slices.DeleteFunc(rest, text.IsQuestionWord)
	if file == "" {
		return rs, nil
	}
	ids, err := chunkIDs(ctx, b.db, file)
	if err != nil || len(ids) < 2 {
		return rs, err
	}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	hits := restScores(b.lex, rest, unquotedTerms(q), in, len(ids))
	if len(hits) == 0 {
		return rs, nil
	}
	// The document's places in rs and their relevances, best first.
	var rels []float64
	old := map[string]Result{}
	for _, r := range rs {
		if r.File == file && r.Match == "" {
			rels = append(rels, r.Relevance)
			old[r.ID] = r
		}
	}
	score := hits
	order := slices.Collect(maps.Keys(old))
	for id := range hits {
		if _, ok := old[id]; !ok {
			order = append(order, id)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		ra, oka := old[a]
		rb, okb := old[b]
		switch {
		case oka && okb && ra.Relevance != rb.Relevance:
			if ra.Relevance > rb.Relevance {
				return -1
			}
			return 1
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	order = order[:len(rels)]
	var missing []string
	for _, id := range order {
		if _, ok := old[id]; !ok {
			missing = append(missing, id)
		}
	}
	found, err := b.chunks(ctx, missing)
	if err != nil {
		return rs, err
	}
	out := make([]Result, 0, len(rs))
	for _, r := range rs {
		if r.File != file || r.Match != "" {
			out = append(out, r)
		}
	}
	for i, id := range order {
		r, ok := old[id]
		if !ok {
			c, ok := found[id]
			if !ok {
				continue
			}
			r = s.chunkResult(b, c, 0)
		}
		r.Relevance = rels[i]
		out = append(out, r)
	}
	sortResults(out)
	return out, nil
}

// rankNamedDocuments puts first the documents the question q names whole
// (applyNamedDocuments), then ranks the chunks of the one it names in each
// base of the results rs (best first) by what it asks (rankNamedDocument).
func (s *Service) rankNamedDocuments(ctx context.Context, bases []*base, q string, rs []Result) ([]Result, error) {
	if len(rs) == 0 {
		return rs, nil
	}
	applyNamedDocuments(q, rs, s.titleTerms.get)
	if len(bases) == 1 {
		out, err := s.rankNamedDocument(ctx, bases[0], q, rs)
		if err != nil {
			return nil, err
		}
		sortResults(out)
		return out, nil
	}
	out := make([]Result, 0, len(rs))
	for _, b := range bases {
		mine := rs // one base's: all of them
		if len(bases) > 1 {
			mine = nil
			for _, r := range rs {
				if r.KnowledgeBase == b.name {
					mine = append(mine, r)
				}
			}
		}
		mine, err := s.rankNamedDocument(ctx, b, q, mine)
		if err != nil {
			return nil, err
		}
		out = append(out, mine...)
	}
	sortResults(out)
	return out, nil
}

// restScores scores the chunks of one document (in, n of them) by the
// question's terms besides the document's name: each term counts by how
// rare it is in the base (its IDF) and in the document (its IDF among the
// document's chunks, so a word every review of the place says, "good",
// weighs less than the one that says what is asked, "view"), times the
// chunk's saturated frequency of it (BM25's, with its heading and, for the
// terms free holds (those outside quoted passages), related words counted
// as in lexicalQuery).
func restScores(lex *retrieve.BM25, rest []string, free, in map[string]bool, n int) map[string]float64 {
	idf := termIDF(lex)
	allow := func(id string) bool { return in[id] }
	out := map[string]float64{}
	for _, t := range rest {
		g := idf(t)
		if !(g > 0) {
			continue
		}
		forms := termForms(lex, t, g, idf, true, free[t])
		hits := lex.SearchClauses([]retrieve.Clause{{Count: 1, IDF: g, Forms: forms}}, n, allow)
		if len(hits) == 0 {
			continue
		}
		df := float64(len(hits))
		local := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		for _, h := range hits {
			out[h.ID] += local * h.Score // h.Score is g times the saturated frequency
		}
	}
	return out
}

// applyNamedDocuments lowers, by outOfScope, the relevance of the results
// (best first) outside the documents whose whole title the question q
// holds (every term of it but numbers, which tell apart documents of one
// name: "Report (2)"), when some result is inside one, and re-sorts. A
// question that names a document asks about it, even when another
// document says more of the question's other words. titleTerms gives a
// file's fileTitleTerms.
func applyNamedDocuments(q string, rs []Result, titleTerms func(string) []string) {
	qset := map[string]bool{}
	for _, t := range lexTerms(stripQuestion(q)) {
		qset[t] = true
	}
	named := map[string]bool{}
	checked := map[string]bool{}
	for _, r := range rs {
		if r.File == "" || checked[r.File] {
			continue
		}
		checked[r.File] = true
		held := 0
		whole := true
		for _, t := range titleTerms(r.File) {
			if isNumber(t) {
				continue
			}
			if !qset[t] {
				whole = false
				break
			}
			held++
		}
		if whole && held > 0 {
			named[r.File] = true
		}
	}
	if len(named) == 0 {
		return
	}
	for i := range rs {
		if !named[rs[i].File] && rs[i].Match == "" {
			rs[i].Relevance *= outOfScope
		}
	}
	sortResults(rs)
}

// isNumber reports whether a term is all digits.
func isNumber(t string) bool {
	for _, r := range t {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return t != ""
}
