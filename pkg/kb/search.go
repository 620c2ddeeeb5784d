package kb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

// SearchRequest is a query over one or more knowledge bases.
type SearchRequest struct {
	Query          string
	KnowledgeBases []string
	// TopK is the number of chunks returned; 0 means the configured top_k.
	TopK int
	// MinRelevance keeps chunks whose relevance (in [0,1]) is at least
	// this; 0 keeps every match. DistanceToRelevance converts a Chatchat
	// score_threshold; DefaultMinRelevance is the configured one.
	MinRelevance float64
	// File restricts the search to files matching this SQL LIKE pattern
	// (% and _ are wildcards), "" for all.
	File string
	// Metadata restricts the search to chunks whose first-level metadata
	// has these values.
	Metadata map[string]any
}

// Result is a chunk found by a search.
type Result struct {
	Chunk
	KnowledgeBase string `json:"knowledge_base"`
	// Relevance is in [0,1], higher is more relevant: the hybrid score of
	// BM25 and vector similarity, or the reranker's score when one is
	// configured; 1 for an addressed part or an absent statement.
	Relevance float64 `json:"relevance"`
	// Match says how the result was found: rag.MatchPart for the part of
	// a document the question addresses by number or name (the first
	// result), rag.MatchAbsent for the statement that the part or the
	// document addressed does not exist (then the only result), "" for
	// similarity.
	Match string `json:"match,omitempty"`
	// Path is the result's section path: the document's title, then the
	// headings it is under (also its metadata's "path").
	Path string `json:"path,omitempty"`
	// Profile names the structure profile the result's knowledge base
	// reads its documents with, "" for none: the names of parts a reader
	// of the passage may meet (llm.Evidence.Profile).
	Profile string `json:"-"`
}

// DefaultMinRelevance is the relevance threshold of the configured
// kb.score_threshold (a Chatchat distance): 1 − d²/2.
func (s *Service) DefaultMinRelevance() float64 { return DistanceToRelevance(s.cfg.ScoreThreshold) }

// relevanceScale maps the hybrid score (of BM25 and one embedder's
// vectors) onto relevance, so that relevance 0.5 (kb.score_threshold 1,
// the default) is where that embedder's matches and non-matches part: a
// hybrid score of mid becomes 0.5, the ranges below and above it are
// stretched linearly onto [0, 0.5] and [0.5, 1]. The order of results never
// changes; only what a threshold means does.
type relevanceScale struct{ mid float64 }

func (c relevanceScale) apply(x float64) float64 {
	if c.mid <= 0 || c.mid == 0.5 {
		return x
	}
	if x <= c.mid {
		return clamp01(0.5 * x / c.mid)
	}
	return clamp01(0.5 + 0.5*(x-c.mid)/(1-c.mid))
}

// scale returns the relevance scale of the service's embedder.
func (s *Service) scale() relevanceScale { return relevanceScale{mid: s.relevanceMid} }

// hybridParams is how BM25 and vectors are fused: a weighted sum of the
// cosine and the BM25 score taken as a share of the query's information
// (so a threshold keeps its meaning from query to query rather than always
// passing the best lexical match).
func (s *Service) hybridParams(info float64) retrieve.HybridParams {
	return retrieve.HybridParams{VectorWeight: s.vectorWeight, LexicalMax: lexicalFullMatch * info}
}

// A chunk whose BM25 score reaches half the query's information is a full
// lexical match (relevance 1 from BM25); below that the lexical relevance is
// the score's share of it.
//
// The information of a question is Σ qtf·idf over its body terms (see
// termIDF), the most a chunk can score for it: each clause of lexicalQuery
// scores at most its term's qtf·idf whether the chunk's body or its heading
// holds the term, so heading matches count inside this bound, as the share
// of the question they cover, not as a bonus on top of it.
//
// lexicalFullMatch is that share: questions carry words no passage
// repeats, so matching half of the query's information as well as the best
// chunk does is as good as it gets.
const lexicalFullMatch = 0.5

// termIDF returns the weight of a question term: its IDF in lex, or, for a
// term no chunk's body contains, the largest IDF (retrieve.BM25.MaxScore
// leaves such terms out, which would make a question whose only known word
// is a common one look fully matched).
func termIDF(lex *retrieve.BM25) func(string) float64 {
	n := float64(lex.Len())
	maxIDF := math.Log(1 + (n+0.5)/0.5)
	return func(t string) float64 {
		if idf := lex.MaxScore([]string{t}); idf != 0 {
			return idf
		}
		return maxIDF
	}
}

// Search returns the chunks most relevant to the query from the named
// knowledge bases, best first, at most TopK and none below MinRelevance.
// Each result's metadata carries its section path ("path": document title,
// then headings).
func (s *Service) Search(ctx context.Context, req SearchRequest) ([]Result, error) {
	out, _, err := s.search(ctx, req)
	return out, err
}

// search is Search that also returns the best relevance found before the
// threshold (0 when nothing matched at all), so a refusal can say why.
func (s *Service) search(ctx context.Context, req SearchRequest) ([]Result, float64, error) {
	if len(req.KnowledgeBases) == 0 {
		return nil, 0, fmt.Errorf("%w: no knowledge base to search", ErrBadRequest)
	}
	k := req.TopK
	if k <= 0 {
		k = s.cfg.TopK
	}
	if k > 1000 {
		return nil, 0, fmt.Errorf("%w: top_k %d: use at most 1000", ErrBadRequest, k)
	}
	if req.MinRelevance < 0 || req.MinRelevance > 1 || math.IsNaN(req.MinRelevance) {
		return nil, 0, fmt.Errorf("%w: relevance threshold %g: use 0..1", ErrBadRequest, req.MinRelevance)
	}
	if strings.TrimSpace(req.Query) == "" {
		return nil, 0, fmt.Errorf("%w: the query is empty", ErrBadRequest)
	}
	seen := map[string]bool{}
	var bases []*base
	for _, name := range req.KnowledgeBases {
		if seen[name] {
			continue
		}
		seen[name] = true
		b, release, err := s.get(ctx, name)
		if err != nil {
			return nil, 0, err
		}
		defer release()
		if err := s.checkModel(b); err != nil {
			return nil, 0, err
		}
		bases = append(bases, b)
	}
	vecs, err := s.emb.Embed(ctx, []string{embedText(stripQuestion(req.Query))})
	if err != nil {
		return nil, 0, fmt.Errorf("embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, 0, fmt.Errorf("embed query: got %d vectors for 1 text", len(vecs))
	}
	qvec := vecs[0]
	profs := make([]*docstruct.Profile, len(bases))
	for i, b := range bases {
		profs[i] = b.profile()
	}
	names := namesOf(profs...)
	depth := max(4*k, 30)
	if s.rerank != nil {
		depth = max(depth, s.cfg.Reranker.Candidates, k)
	}
	var all []Result
	for _, b := range bases {
		rs, err := s.searchBase(ctx, b, req, qvec, depth, names)
		if err != nil {
			return nil, 0, fmt.Errorf("search %s: %w", b.name, err)
		}
		if all == nil {
			all = rs // one base's (the usual search): not copied
		} else {
			all = append(slices.Clip(all), rs...)
		}
	}
	sortResults(all)
	if s.rerank == nil {
		n := 0
		for _, b := range bases {
			n += b.lex.Len()
		}
		applyCoverage(req.Query, all, n)
	}
	if req.File == "" && len(req.Metadata) == 0 {
		if all, err = s.rankNamedDocuments(ctx, bases, req.Query, all); err != nil {
			return nil, 0, err
		}
	}
	applyScopes(req.Query, all, names)
	if s.rerank != nil && len(all) > 0 {
		cand := all[:min(len(all), depth)]
		if all, err = s.rerankResults(ctx, req.Query, cand); err != nil {
			return nil, 0, err
		}
	}
	if req.File == "" && len(req.Metadata) == 0 {
		// A filtered search asks for chunks, not for an addressed part.
		a, err := s.addressed(ctx, bases, req.Query, all)
		if err != nil {
			return nil, 0, err
		}
		if a != nil {
			all = withAddressed(a, all)
		}
	}
	// A chunk of a document about a namesake of what the question names
	// is no answer, however similar (namesake.go).
	all = dropNamesakes(req.Query, all, bases)
	best := 0.0
	if len(all) > 0 {
		best = all[0].Relevance
	}
	profile := map[string]string{}
	for i, b := range bases {
		if profs[i] != nil {
			profile[b.name] = profs[i].Name
		}
	}
	out := make([]Result, 0, k)
	for _, r := range all {
		if len(out) == k {
			break
		}
		if r.Relevance >= req.MinRelevance {
			r.Profile = profile[r.KnowledgeBase]
			if r.Match == "" {
				r.Metadata = withPath(r.Metadata, r.Path)
			}
			out = append(out, r)
		}
	}
	return out, best, nil
}

func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Relevance != rs[j].Relevance {
			return rs[i].Relevance > rs[j].Relevance
		}
		if rs[i].KnowledgeBase != rs[j].KnowledgeBase {
			return rs[i].KnowledgeBase < rs[j].KnowledgeBase
		}
		return rs[i].ID < rs[j].ID
	})
}

// searchBase runs the hybrid search in one KB and returns up to depth
// candidates with their chunks.
func (s *Service) searchBase(ctx context.Context, b *base, req SearchRequest, qvec []float32, depth int, names queryNames) ([]Result, error) {
	if err := s.refresh(ctx, b); err != nil {
		return nil, err
	}
	var allow func(string) bool
	var flt Filter
	if req.File != "" || len(req.Metadata) > 0 {
		chunks, err := filterChunks(ctx, b.db, req.File, req.Metadata)
		if err != nil {
			return nil, err
		}
		if len(chunks) == 0 {
			return nil, nil
		}
		ids := make(map[string]bool, len(chunks))
		files := map[string]bool{}
		for _, c := range chunks {
			ids[c.ID] = true
			files[c.File] = true
		}
		allow = func(id string) bool { return ids[id] }
		for f := range files {
			flt.Files = append(flt.Files, f)
		}
		sort.Strings(flt.Files)
		flt.Metadata = req.Metadata
	}
	clauses, info := lexicalQuery(b.lex, req.Query, names)
	lexical := b.lex.SearchClauses(clauses, depth, allow)
	vector, err := b.vec.Search(ctx, qvec, depth, flt)
	if err != nil {
		return nil, err
	}
	fused := retrieve.Hybrid(lexical, vector, s.hybridParams(info))
	if len(fused) > depth {
		fused = fused[:depth]
	}
	ids := make([]string, len(fused))
	for i, h := range fused {
		ids[i] = h.ID
	}
	chunks, err := b.chunks(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(fused))
	for _, h := range fused {
		c, ok := chunks[h.ID]
		if !ok {
			continue // a point whose row is gone (e.g. left in Qdrant by a crash)
		}
		out = append(out, s.chunkResult(b, c, s.scale().apply(h.Score)))
	}
	return out, nil
}

// chunkResult is chunk c of base b found with relevance rel, under its
// section path. Its metadata is the chunk's, shared (the chunk cache's):
// search gives the results it returns a copy with their section path
// added (withPath), and only those, as most candidates are dropped.
func (s *Service) chunkResult(b *base, c cachedChunk, rel float64) Result {
	return Result{Chunk: c.Chunk, KnowledgeBase: b.name, Relevance: rel, Path: c.path}
}

// withPath is a copy of a chunk's metadata with its section path under
// "path".
func withPath(meta map[string]any, pth string) map[string]any {
	out := make(map[string]any, len(meta)+1)
	maps.Copy(out, meta)
	out["path"] = pth
	return out
}

// rerankResults rescores candidates with the reranker; its scores become
// the relevance (squashed with the logistic function when the server
// returns raw logits rather than probabilities).
func (s *Service) rerankResults(ctx context.Context, query string, cand []Result) ([]Result, error) {
	docs := make([]string, len(cand))
	for i, r := range cand {
		docs[i] = r.Text
	}
	scores, err := s.rerank.Rerank(ctx, query, docs)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	if len(scores) != len(cand) {
		return nil, fmt.Errorf("rerank: %d scores for %d documents", len(scores), len(cand))
	}
	logits := false
	for _, x := range scores {
		if x < 0 || x > 1 {
			logits = true
		}
	}
	out := append([]Result(nil), cand...)
	for i := range out {
		x := scores[i]
		if logits {
			x = 1 / (1 + math.Exp(-x))
		}
		out[i].Relevance = clamp01(x)
	}
	sortResults(out)
	return out, nil
}

// ListChunks returns the chunks of the documents matching the SQL LIKE
// pattern file ("" = all) whose metadata has the given values, in document
// order: Chatchat's search_docs without a query.
func (s *Service) ListChunks(ctx context.Context, name, file string, metadata map[string]any) ([]Chunk, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	return filterChunks(ctx, b.db, file, metadata)
}

// ChunkMetadata returns the distinct metadata of the knowledge base's
// chunks, in the order of their first chunks (by file and position): the
// headings and fields a vocabulary wants, without reading every chunk.
func (s *Service) ChunkMetadata(ctx context.Context, name string) ([]map[string]any, error) {
	b, release, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []map[string]any
	err = sqlrows.Each(ctx, b.db, `SELECT metadata FROM chunks GROUP BY metadata ORDER BY MIN(file), MIN(seq)`, nil, func(row sqlrows.Scanner) error {
		var raw string
		if err := row.Scan(&raw); err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return fmt.Errorf("chunk metadata %.40q: %w", raw, err)
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chunk metadata of %s: %w", name, err)
	}
	return out, nil
}

// compiledFilter is a Filter prepared for many checks.
type compiledFilter struct {
	ids, files map[string]bool
	meta       map[string]string // key → JSON of the wanted value
}

func compileFilter(f Filter) compiledFilter {
	c := compiledFilter{}
	if len(f.IDs) > 0 {
		c.ids = make(map[string]bool, len(f.IDs))
		for _, id := range f.IDs {
			c.ids[id] = true
		}
	}
	if len(f.Files) > 0 {
		c.files = make(map[string]bool, len(f.Files))
		for _, x := range f.Files {
			c.files[x] = true
		}
	}
	if len(f.Metadata) > 0 {
		c.meta = make(map[string]string, len(f.Metadata))
		for k, v := range f.Metadata {
			b, _ := json.Marshal(v)
			c.meta[k] = string(b)
		}
	}
	return c
}

func (c compiledFilter) match(id, file string, meta map[string]any) bool {
	if c.ids != nil && !c.ids[id] {
		return false
	}
	if c.files != nil && !c.files[file] {
		return false
	}
	for k, want := range c.meta {
		got, ok := meta[k]
		if !ok {
			return false
		}
		b, err := json.Marshal(got)
		if err != nil || string(b) != want {
			return false
		}
	}
	return true
}
