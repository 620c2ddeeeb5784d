package search

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/redact"
	"github.com/mixchat/mixchat/pkg/text"
	"github.com/mixchat/mixchat/prompts"
)

// PromptGroup is the prompt templates' group: prompts/search_engine_chat.NAME.tmpl.
const PromptGroup = "search_engine_chat"

// LookupRequest is one search whose results an answer will rest on.
type LookupRequest struct {
	Engine string // "" means the default engine
	Query  string
	TopK   int // results (or passages, with Split); 0 means the configured top_k
	// Split splits the results' text into passages and keeps the TopK most
	// relevant to the query across all results (Chatchat's split_result),
	// instead of one document per result.
	Split bool
}

// Doc is one numbered piece of evidence: the text a citation [N] refers to.
type Doc struct {
	N     int     `json:"n"`
	Title string  `json:"title"`
	URL   string  `json:"url"`
	Text  string  `json:"text"`
	Score float64 `json:"score,omitempty"` // normalised relevance in [0,1] when the engine gives one (local)
}

// Retrieval is what a search found and what an answer would be grounded on.
type Retrieval struct {
	Engine  string
	Query   string
	Results []Result // as the engine returned them, Content filled by page reading
	Docs    []Doc    // the numbered evidence
	// Warnings name what failed without failing the search: members of a
	// combined engine, pages that could not be read.
	Warnings []string
}

// Lookup searches, reads the top pages when page reading is on, and picks
// the evidence an answer rests on. It does not call a model.
func (s *Service) Lookup(ctx context.Context, r LookupRequest) (Retrieval, error) {
	name := r.Engine
	if name == "" {
		name = s.def
	}
	sr, err := s.Searcher(name)
	if err != nil {
		return Retrieval{}, err
	}
	k := r.TopK
	if k <= 0 {
		k = s.cfg.TopK
	}
	out := Retrieval{Engine: name, Query: r.Query}
	if m, ok := sr.(*Multi); ok {
		var errs []error
		out.Results, errs = m.SearchAll(ctx, r.Query, k)
		if len(errs) == len(m.members) {
			return Retrieval{}, errors.Join(errs...)
		}
		for _, e := range errs {
			out.Warnings = append(out.Warnings, e.Error())
		}
	} else {
		out.Results, err = sr.Search(ctx, r.Query, k)
		if err != nil {
			return Retrieval{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Retrieval{}, err
	}
	if s.fetcher != nil {
		out.Warnings = append(out.Warnings, s.readPages(ctx, r.Query, out.Results)...)
	}
	if r.Split {
		out.Docs = splitDocs(r.Query, out.Results, k, s.passageChars())
	} else {
		for i, res := range out.Results {
			out.Docs = append(out.Docs, resultDoc(i+1, res))
		}
	}
	return out, nil
}

func (s *Service) passageChars() int {
	if s.fetcher != nil {
		return s.fetcher.cfg.PassageChars
	}
	return DefaultConfig().Fetch.PassageChars
}

func resultDoc(n int, r Result) Doc {
	t := r.Text()
	if t == "" {
		t = r.Title
	}
	d := Doc{N: n, Title: r.Title, URL: r.URL, Text: t}
	if r.Engine == LocalEngine || strings.HasPrefix(r.URL, "local:") || strings.HasPrefix(r.URL, "file:") {
		d.Score = r.Score
	}
	return d
}

// readPages reads the top http(s) results' pages and puts their passages
// most relevant to query into Content. It returns a warning per page that
// could not be read (the result keeps its snippet).
func (s *Service) readPages(ctx context.Context, query string, rs []Result) []string {
	f := s.fetcher
	var idx []int
	var urls []string
	for i, r := range rs {
		if len(idx) == f.cfg.MaxPages {
			break
		}
		if r.Content == "" && (strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) {
			idx = append(idx, i)
			urls = append(urls, r.URL)
		}
	}
	pages, errs := f.FetchAll(ctx, urls)
	var warnings []string
	for j, i := range idx {
		if errs[j] != nil {
			warnings = append(warnings, redact.Message(errs[j]))
			continue
		}
		ps, err := splitPassagesContext(ctx, pages[j].Text, f.cfg.PassageChars)
		if err != nil {
			break // the reply is cancelled: reading more pages is wasted work
		}
		best := rankPassages(query, [][]string{ps}, f.cfg.Passages)
		// Keep the chosen passages in page order, so they read as the page
		// does.
		keep := make([]bool, len(ps))
		for _, p := range best {
			keep[p.Pos] = true
		}
		var parts []string
		for p, ok := range keep {
			if ok {
				parts = append(parts, ps[p])
			}
		}
		rs[i].Content = strings.Join(parts, "\n…\n")
		if rs[i].Title == "" || rs[i].Title == rs[i].URL {
			rs[i].Title = pages[j].Title
		}
	}
	return warnings
}

// splitDocs splits every result's text into passages and keeps the k most
// relevant to query, each a Doc citing its result.
func splitDocs(query string, rs []Result, k, size int) []Doc {
	texts := make([][]string, len(rs))
	for i, r := range rs {
		texts[i] = splitPassages(r.Text(), size)
	}
	var out []Doc
	for i, p := range rankPassages(query, texts, k) {
		r := rs[p.Doc]
		out = append(out, Doc{N: i + 1, Title: r.Title, URL: r.URL, Text: p.Text})
	}
	return out
}

// PromptData is what the search_engine_chat templates are rendered with.
type PromptData struct {
	Question string
	Engine   string
	Docs     []Doc  // numbered from 1
	Context  string // the docs as one text: "[N] title\nurl\ntext", blank-line separated (no local file links)
}

// Prompt renders the search_engine_chat template name ("" means default)
// for question and docs.
func Prompt(name, engine, question string, docs []Doc) (string, error) {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s\n", d.N, d.Title)
		if u := displayURL(d.URL); !isLocalURL(u) {
			b.WriteString(u + "\n")
		}
		b.WriteString(strings.TrimPrefix(d.Text, d.Title+"\n"))
	}
	return prompts.Render(PromptGroup, name, PromptData{Question: question, Engine: engine, Docs: docs, Context: b.String()})
}

// isLocalURL reports whether u links a local file: not shown to a prompt
// (the title names the document; the docs event gives clients the link).
func isLocalURL(u string) bool {
	return strings.HasPrefix(u, "local:") || strings.HasPrefix(u, "file:")
}

// displayURL is u with its percent-escapes decoded when they decode to
// UTF-8 text (local:zhouyi/%E7%B3%BB.txt reads as local:zhouyi/系.txt), which
// reads better and costs fewer tokens in a prompt.
func displayURL(u string) string {
	d, err := url.PathUnescape(u)
	if err != nil || !utf8.ValidString(d) || strings.ContainsAny(d, " \n") {
		return u
	}
	return d
}

// AnswerOptions tune one answer beyond rag.Query.
type AnswerOptions struct {
	Split bool // see LookupRequest.Split
}

// Answer answers q from the results of q.SearchEngine (the default when
// empty) for the standalone question: it searches, renders the
// search_engine_chat prompt with the numbered results, and asks the model
// to answer with citations [n], streaming through fn when it is not nil.
// The answer's Sources are the numbered results. When the search finds
// nothing the answer says so, is marked Empty, and no model is called.
func (s *Service) Answer(ctx context.Context, q rag.Query, fn func(delta string) error) (rag.Answer, error) {
	a, _, err := s.AnswerWith(ctx, q, AnswerOptions{}, fn)
	return a, err
}

// AnswerWith is Answer with options; it also returns the retrieval the
// answer rests on.
func (s *Service) AnswerWith(ctx context.Context, q rag.Query, o AnswerOptions, fn func(delta string) error) (rag.Answer, Retrieval, error) {
	ans := rag.Answer{From: "search"}
	if s.models == nil {
		return ans, Retrieval{}, errors.New("search answerer: no models configured")
	}
	if !prompts.Has(PromptGroup, q.PromptName) {
		return ans, Retrieval{}, fmt.Errorf("prompt %q of %s not found (have: %s)", q.PromptName, PromptGroup, strings.Join(prompts.Names(PromptGroup), ", "))
	}
	model, modelName, err := s.models.Get(q.Model)
	if err != nil {
		return ans, Retrieval{}, err
	}
	question := q.Retrieval()
	ret, err := s.Lookup(ctx, LookupRequest{Engine: q.SearchEngine, Query: question, TopK: q.TopK, Split: o.Split})
	if err != nil {
		return ans, Retrieval{}, err
	}
	if len(ret.Docs) == 0 {
		ans.Empty = true
		ans.Text = noResults(question, ret.Engine)
		if fn != nil {
			if err := fn(ans.Text); err != nil {
				return ans, ret, err
			}
		}
		return ans, ret, nil
	}
	ret.Docs = fitDocs(ret.Docs, q.EvidenceTokens)
	prompt, err := Prompt(prompts.ForQuestion(PromptGroup, q.PromptName, question), ret.Engine, question, ret.Docs)
	if err != nil {
		return ans, ret, err
	}
	msgs := make([]llm.Message, 0, len(q.History)+1)
	msgs = append(msgs, q.History...)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: prompt})
	req := llm.Request{
		Model:       modelName,
		Messages:    msgs,
		Temperature: q.Temperature,
		MaxTokens:   q.MaxTokens,
	}
	// The reply rests on the numbered pages (a page's passage has no
	// section path).
	g := llm.Grounding{Question: question, Asked: q.Text}
	for _, d := range ret.Docs {
		g.Evidence = append(g.Evidence, llm.Evidence{ID: d.N, Title: d.Title, Text: d.Text, From: rag.Search})
	}
	resp, err := llm.AsGenerator(model).Generate(ctx, req, g, fn)
	if err != nil {
		return ans, ret, err
	}
	ans.Text = resp.Text
	ans.Response = resp
	ans.Sources = sources(ret.Docs)
	return ans, ret, nil
}

// Retrieve returns the evidence Answer would answer q from, without calling
// a model (rag.Retriever): the numbered docs of a Lookup for the standalone
// question, as sources, best first.
func (s *Service) Retrieve(ctx context.Context, q rag.Query) ([]rag.Source, error) {
	ret, err := s.Lookup(ctx, LookupRequest{Engine: q.SearchEngine, Query: q.Retrieval(), TopK: q.TopK})
	if err != nil {
		return nil, err
	}
	return sources(ret.Docs), nil
}

func sources(docs []Doc) []rag.Source {
	out := make([]rag.Source, 0, len(docs))
	for _, d := range docs {
		out = append(out, rag.Source{Title: d.Title, URL: d.URL, Snippet: d.Text, Score: d.Score})
	}
	return out
}

// noResults is the answer when the search found nothing, in the question's
// language.
func noResults(question, engine string) string {
	for _, r := range question {
		if text.IsCJK(r) {
			return fmt.Sprintf("搜索引擎 %s 没有找到与问题相关的结果。", engine)
		}
	}
	return fmt.Sprintf("The search engine %s found nothing relevant to the question.", engine)
}
