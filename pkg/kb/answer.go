package kb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/prompts"
)

// PromptGroup is the prompts/ group of the knowledge-base templates:
// "default" (the strict prompt: answer only from the known information),
// "empty" (nothing was found: the model answers alone) and "en".
const PromptGroup = "knowledge_base_chat"

// promptData is what the knowledge_base_chat templates see.
type promptData struct {
	Context  string // the retrieved chunks, numbered "[1] ..."
	Question string
}

// ChatRequest is a question answered from knowledge bases.
type ChatRequest struct {
	Query          string
	KnowledgeBases []string
	TopK           int     // 0: the configured top_k
	MinRelevance   float64 // relevance threshold in [0,1]; 0 keeps every match
	// History goes before the prompt as chat messages (Chatchat's
	// knowledge_base_chat history); the mix answerer sends none unless
	// kb.history is set.
	History     []llm.Message
	Model       string
	Temperature *float32
	MaxTokens   int
	PromptName  string // "" = "default"
	// NoModelWhenEmpty answers "nothing found" without a model call when
	// no chunk passes the threshold (the mix answerer), instead of the
	// "empty" prompt.
	NoModelWhenEmpty bool
	// EvidenceTokens bounds the chunks the prompt carries, best first, the
	// last cut to fit (rag.FitEvidence); 0 keeps every chunk found
	// (rag.Query.EvidenceTokens: the mix answerer's budget).
	EvidenceTokens int
}

// ChatReply is the answer with the chunks it rests on.
type ChatReply struct {
	rag.Answer
	Results []Result
	// BestRelevance is the relevance of the best chunk found, before the
	// threshold MinRelevance was applied (0: nothing matched at all).
	BestRelevance float64 `json:"best_relevance"`
	MinRelevance  float64 `json:"min_relevance"`
	// Reason says why nothing was used when Empty ("the best relevance
	// 0.31 is below the threshold 0.50"), "" otherwise.
	Reason string `json:"reason,omitempty"`
}

// DownloadPath is the API path that downloads a document's original.
func DownloadPath(kb, file string) string {
	return "/knowledge_base/download_doc?" + url.Values{"knowledge_base_name": {kb}, "file_name": {file}}.Encode()
}

// FormatContext numbers the chunks for the prompt, each under its section
// path: "[1] path\ntext", one per paragraph.
func FormatContext(rs []Result) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = contextEntry(i+1, r)
	}
	return strings.Join(parts, "\n\n")
}

// contextEntry is one numbered chunk as the model sees it: "[n] ", the
// section path on its own line (a heading: document title, then the
// headings the chunk is under), then the text (entryText).
func contextEntry(n int, r Result) string {
	head := "[" + strconv.Itoa(n) + "] "
	path, text := entryText(r)
	if path != "" {
		head += path + "\n"
	}
	return head + text
}

// entryText is a chunk's section path and its text as the model gets
// them. A chunk that starts with the Markdown heading the path ends with
// ("## 第一章 总则" under "… > 第一章 总则") starts after it: the path already
// says it.
func entryText(r Result) (path, text string) {
	text = r.Text
	p := titleOf(r.File, r.Metadata)
	if p == "" || r.Match != "" {
		// An addressed part keeps its label; an absent statement is
		// whole.
		return p, text
	}
	last := p
	if i := strings.LastIndex(p, " > "); i >= 0 {
		last = p[i+len(" > "):]
	}
	first, rest, _ := strings.Cut(text, "\n")
	if h := strings.TrimLeft(first, "#"); h != first && strings.TrimSpace(h) == last && strings.TrimSpace(rest) != "" {
		text = rest
	}
	return p, text
}

// Request builds the model request for a question and the chunks found for
// it: the strict prompt over the numbered chunks, or the "empty" prompt
// when there are none, after the history; and the grounding of the reply
// (llm.Generator): the question and the chunks as evidence, numbered as the
// prompt numbers them (the strict prompt answers from them alone), or,
// with no chunks, the history (the "empty" prompt answers from the
// conversation).
func Request(req ChatRequest, results []Result) (llm.Request, llm.Grounding, bool, error) {
	chosen := prompts.ForQuestion(PromptGroup, req.PromptName, req.Query) // "en" for a question in English
	name := chosen
	if name == "" {
		name = "default"
	}
	empty := len(results) == 0
	data := promptData{Question: req.Query}
	g := llm.Grounding{Question: req.Query}
	if empty {
		g.History = req.History
		name = "empty"
		if chosen != "" && prompts.Has(PromptGroup, "empty_"+chosen) {
			name = "empty_" + chosen
		}
	} else {
		data.Context = FormatContext(results)
		for i, r := range results {
			path, text := entryText(r)
			g.Evidence = append(g.Evidence, llm.Evidence{ID: i + 1, Title: titleOf(r.File, nil), Path: path, Text: text, From: rag.KB, Match: r.Match, Profile: r.Profile})
		}
	}
	text, err := prompts.Render(PromptGroup, name, data)
	if err != nil {
		return llm.Request{}, llm.Grounding{}, empty, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	msgs := append([]llm.Message{}, req.History...)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: text})
	return llm.Request{
		Model:       req.Model,
		Messages:    msgs,
		Temperature: req.Temperature,
		MaxTokens:   req.MaxTokens,
	}, g, empty, nil
}

// Sources turns results into the answer's sources (file, download link,
// relevance, text).
func Sources(rs []Result) []rag.Source {
	out := make([]rag.Source, len(rs))
	for i, r := range rs {
		out[i] = rag.Source{
			Title: r.File, Snippet: r.Text,
			Score: r.Relevance, KB: r.KnowledgeBase, File: r.File, Path: r.Path, Match: r.Match, Profile: r.Profile,
		}
		if r.File != "" {
			out[i].URL = DownloadPath(r.KnowledgeBase, r.File)
		}
	}
	return out
}

// Chat retrieves the chunks for the question and asks the model to answer
// from them (streaming through fn when it is not nil). When nothing passes
// the threshold the model answers alone with the "empty" prompt and the
// answer is marked Empty.
func (s *Service) Chat(ctx context.Context, req ChatRequest, fn func(delta string) error) (ChatReply, error) {
	if s.models == nil {
		return ChatReply{}, errors.New("kb chat: no language model configured")
	}
	if req.Model == "" {
		req.Model = s.cfg.Model
	}
	results, best, err := s.search(ctx, SearchRequest{
		Query: req.Query, KnowledgeBases: req.KnowledgeBases, TopK: req.TopK, MinRelevance: req.MinRelevance,
	})
	if err != nil {
		return ChatReply{}, err
	}
	results = fitResults(results, req.EvidenceTokens)
	reason := refusalReason(best, req.MinRelevance)
	if len(results) > 0 && results[0].Match == "" {
		w, err := s.unknownName(ctx, req.KnowledgeBases, req.Query)
		if err != nil {
			return ChatReply{}, err
		}
		if w != "" {
			results, reason = nil, fmt.Sprintf("no chunk holds %q, which the question names", w)
		}
	}
	if len(results) == 0 && req.NoModelWhenEmpty {
		reply, err := nothingFound(req.Query, fn)
		reply.BestRelevance, reply.MinRelevance = best, req.MinRelevance
		reply.Reason = reason
		reply.Answer.Reason = reply.Reason
		return reply, err
	}
	model, name, err := s.models.Get(req.Model)
	if err != nil {
		return ChatReply{}, err
	}
	lreq, g, empty, err := Request(req, results)
	if err != nil {
		return ChatReply{}, err
	}
	lreq.Model = name
	if !empty {
		if g.Weights, err = s.termWeights(ctx, req.KnowledgeBases, req.Query); err != nil {
			return ChatReply{}, err
		}
	}
	resp, err := llm.AsGenerator(model).Generate(ctx, lreq, g, fn)
	reply := ChatReply{
		Answer:        rag.Answer{From: "kb", Text: resp.Text, Sources: Sources(results), Empty: empty, Response: resp},
		Results:       results,
		BestRelevance: best,
		MinRelevance:  req.MinRelevance,
	}
	if empty {
		reply.Reason = reason
		reply.Answer.Reason = reply.Reason
	}
	if err != nil {
		return reply, fmt.Errorf("kb chat: %w", err)
	}
	return reply, nil
}

// termWeights returns the query's terms (lexTerms) with their inverse
// document frequency over the chunks of the knowledge bases named, taken as
// one collection (llm.Grounding.Weights): BM25's idf, a term no chunk holds
// weighing like one a single chunk holds. nil when the bases hold no chunk.
func (s *Service) termWeights(ctx context.Context, names []string, query string) (map[string]float64, error) {
	df := map[string]int{}
	for _, t := range lexTerms(query) {
		df[t] = 0
	}
	n := 0
	err := s.eachLexicon(ctx, names, func(lex *retrieve.BM25) {
		n += lex.Len()
		for t := range df {
			df[t] += lex.DocFreq(t)
		}
	})
	if err != nil {
		return nil, err
	}
	if n == 0 || len(df) == 0 {
		return nil, nil
	}
	w := make(map[string]float64, len(df))
	for t, d := range df {
		d := float64(max(d, 1))
		w[t] = math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
	}
	return w, nil
}

// fitResults keeps the leading results whose texts fit in budget tokens,
// the last one cut to fit (rag.FitEvidence); budget 0 keeps them all.
func fitResults(rs []Result, budget int) []Result {
	return rag.FitEach(rs, budget, func(r Result) string { return r.Text }, func(r *Result, t string) { r.Text = t })
}

// refusalReason says why no chunk was used.
func refusalReason(best, minRel float64) string {
	if best <= 0 {
		return "no chunk matched the question"
	}
	return fmt.Sprintf("the best relevance %.3f is below the threshold %.3f", best, minRel)
}

var _ rag.Answerer = (*Service)(nil)

// Answer is the knowledge-base answerer of mix_chat: it retrieves with the
// standalone question (q.Retrieval()) from q.KnowledgeBases, or the
// configured default knowledge bases, keeps the top q.TopK chunks whose
// relevance reaches q.ScoreThreshold (0: the configured threshold) and
// answers from them with the strict prompt; when none does it says so,
// marked Empty, without a model call. The conversation's history is left
// out unless kb.history is set.
func (s *Service) Answer(ctx context.Context, q rag.Query, fn func(delta string) error) (rag.Answer, error) {
	kbs := q.KnowledgeBases
	if len(kbs) == 0 {
		kbs = s.cfg.DefaultKnowledgeBases
	}
	if len(kbs) == 0 {
		return rag.Answer{From: "kb"}, fmt.Errorf("%w: no knowledge base named: pass knowledge_base_name or set kb.default_knowledge_bases", ErrBadRequest)
	}
	minRel := q.ScoreThreshold
	if minRel <= 0 {
		minRel = s.DefaultMinRelevance()
	}
	req := ChatRequest{
		Query: q.Retrieval(), KnowledgeBases: kbs, TopK: q.TopK, MinRelevance: minRel,
		Model: q.Model, Temperature: q.Temperature, MaxTokens: q.MaxTokens, PromptName: q.PromptName,
		NoModelWhenEmpty: true, EvidenceTokens: q.EvidenceTokens,
	}
	if s.cfg.History {
		req.History = q.History
	}
	reply, err := s.Chat(ctx, req, fn)
	return reply.Answer, err
}

// eachLexicon calls fn with the lexical index of each distinct base of
// names, held open for the call: the document frequencies and sizes over
// which a question's terms are weighed (termWeights, unknownName).
func (s *Service) eachLexicon(ctx context.Context, names []string, fn func(lex *retrieve.BM25)) error {
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		b, release, err := s.get(ctx, name)
		if err != nil {
			return err
		}
		fn(b.lex)
		release()
	}
	return nil
}
