package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/turn"
	"github.com/mixchat/mixchat/prompts"
)

// searchChatRequest is the body of POST /chat/search_engine_chat, Chatchat
// 0.2's fields.
type searchChatRequest struct {
	Query            string `json:"query"`
	SearchEngineName string `json:"search_engine_name"` // "" means the configured default
	TopK             *int   `json:"top_k"`
	chatchatFields
	SplitResult bool `json:"split_result"`
	// ConversationID, when set, stores the exchange in that conversation
	// (mixchat's extension). A follow-up is made standalone before the
	// search against the history sent, else the conversation's; the
	// answer's prompt still sees no history unless sent.
	ConversationID string `json:"conversation_id"`
	// What is recalled of the conversation for that rewrite.
	memoryFields
}

// searchSource is one source of a search answer, structured.
type searchSource struct {
	N       int     `json:"n"` // the number citations [n] refer to
	Title   string  `json:"title"`
	URL     string  `json:"url"`
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score,omitempty"`
}

// searchDocsEvent is the last event of a streamed reply: Chatchat's docs
// (Markdown strings) and the same sources structured.
type searchDocsEvent struct {
	Docs     []string       `json:"docs"`
	Sources  []searchSource `json:"sources"`
	Engine   string         `json:"engine"`
	Empty    bool           `json:"empty,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	// MessageID is the stored answer's id when the request named a
	// conversation; Error says why storing it failed.
	MessageID string `json:"message_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// searchChatReply is the body of a non-streamed reply.
type searchChatReply struct {
	Answer string `json:"answer"`
	searchDocsEvent
	Model      string    `json:"model,omitempty"`
	Extractive bool      `json:"extractive,omitempty"`
	Usage      llm.Usage `json:"usage"`
}

// searchErrorEvent ends a stream that failed after it started.
type searchErrorEvent struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// maxSearchTopK bounds top_k.
const maxSearchTopK = 50

// validateSearch checks the fields the search endpoints share and returns
// top_k with its default applied.
func (s *Server) validateSearch(query, engine string, topK *int) (int, error) {
	if err := requireQuery(query); err != nil {
		return 0, err
	}
	k := s.search.TopK()
	if topK != nil {
		if *topK < 1 || *topK > maxSearchTopK {
			return 0, errBadRequest("top_k must be between 1 and %d, got %d", maxSearchTopK, *topK)
		}
		k = *topK
	}
	if _, err := s.search.Searcher(engine); err != nil {
		return 0, err
	}
	return k, nil
}

// check validates a search chat request: its search fields, then its model
// and rewrite fields, then its prompt. It returns top_k with its default
// applied, the client's history and the rewrite settings.
func (r searchChatRequest) check(s *Server) (topK int, history []llm.Message, mem rewriteSettings, err error) {
	if topK, err = s.validateSearch(r.Query, r.SearchEngineName, r.TopK); err != nil {
		return 0, nil, rewriteSettings{}, err
	}
	if history, mem, err = s.checkRewrite(r.chatchatFields, r.memoryFields); err != nil {
		return 0, nil, rewriteSettings{}, err
	}
	if !prompts.Has(search.PromptGroup, r.PromptName) {
		return 0, nil, rewriteSettings{}, errBadRequest("prompt_name %q unknown; available: %s", r.PromptName, strings.Join(prompts.Names(search.PromptGroup), ", "))
	}
	return topK, history, mem, nil
}

func (s *Server) handleSearchChat(c *gin.Context, req *searchChatRequest) {
	topK, history, mem, err := req.check(s)
	if err != nil {
		writeError(c, err)
		return
	}
	if err := s.claimConversation(c.Request.Context(), req.ConversationID, "search_chat"); err != nil {
		writeError(c, err)
		return
	}
	q := req.query(req.Query, history)
	q.TopK, q.SearchEngine = topK, req.SearchEngineName
	opts := search.AnswerOptions{Split: req.SplitResult}
	// The endpoint's own answerer: the search answerer with Chatchat's
	// split_result, keeping the retrieval for Chatchat's docs.
	var ret search.Retrieval
	answer := rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		q.History = history // the recalled history served the rewrite only
		ans, r, err := s.search.AnswerWith(ctx, q, opts, fn)
		ret = r
		return ans, err
	})
	w := &searchChatWriter{reply: s.newReply(c, req.Stream)}
	tr := turn.Request{ConversationID: req.ConversationID, AnswerID: newAnswerID(), Query: q, From: rag.Search, Answerer: answer,
		Record: func(res turn.Result) map[string]any {
			w.docs = docsEvent(res.Answer, ret)
			return withStandalone(map[string]any{"answerer": rag.Search, "sources": w.docs.Sources}, res)
		}}
	mem.apply(&tr)
	s.runTurn(c, tr, w)
}

// searchChatWriter writes a search_engine_chat reply in Chatchat's shapes.
type searchChatWriter struct {
	reply
	docs searchDocsEvent
}

func (w *searchChatWriter) event(ev turn.Event) error {
	return w.delta(ev, func(text string) any { return kbChatDelta{Answer: text} })
}

func (w *searchChatWriter) done(res turn.Result, err error) {
	ev := w.docs
	ev.MessageID = res.MessageID()
	if w.out == nil {
		if res.StoreErr != nil {
			writeError(w.c, res.StoreErr)
			return
		}
		w.c.JSON(http.StatusOK, searchChatReply{
			Answer: res.Text, searchDocsEvent: ev,
			Model: res.Response.Model, Extractive: res.Response.Extractive, Usage: res.Response.Usage,
		})
		return
	}
	if err != nil {
		_ = w.out.Send(searchErrorEvent{Error: publicMessage(err), Code: errorStatus(err)})
		return
	}
	if res.StoreErr != nil {
		ev.Error = publicMessage(res.StoreErr)
	}
	_ = w.out.Send(ev)
}

func (w *searchChatWriter) fail(_ turn.Result, err error) {
	w.end(err, func() any { return searchErrorEvent{Error: publicMessage(err), Code: errorStatus(err)} })
}

// docsEvent builds the sources of an answer in Chatchat's Markdown form
// ("出处 [n] [title](url) \n\ntext\n\n", as its knowledge-base chat writes
// them, so each doc carries title, address and snippet) and structured.
func docsEvent(ans rag.Answer, ret search.Retrieval) searchDocsEvent {
	ev := searchDocsEvent{Docs: []string{}, Sources: []searchSource{}, Engine: ret.Engine, Empty: ans.Empty, Warnings: ret.Warnings}
	for _, d := range ret.Docs {
		ev.Docs = append(ev.Docs, fmt.Sprintf("出处 [%d] [%s](%s) \n\n%s\n\n", d.N, mdLinkText(d.Title, d.URL), mdLinkTarget(d.URL), d.Text))
		ev.Sources = append(ev.Sources, searchSource{N: d.N, Title: d.Title, URL: d.URL, Snippet: d.Text, Score: d.Score})
	}
	return ev
}

// mdLinkText is title as a Markdown link's text: on one line, without the
// brackets that would end it early; the address when there is no title.
func mdLinkText(title, addr string) string {
	t := strings.Join(strings.Fields(title), " ")
	if t == "" {
		t = addr
	}
	return strings.NewReplacer("[", "(", "]", ")").Replace(t)
}

// mdLinkTarget is u as a Markdown link's target: the parentheses and
// spaces that would end it early percent-encoded.
func mdLinkTarget(u string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "\n", "", "\r", "").Replace(u)
}

// listSearchEnginesReply is Chatchat's BaseResponse listing engine names,
// with mixchat's details of each.
type listSearchEnginesReply struct {
	Code    int                 `json:"code"`
	Msg     string              `json:"msg"`
	Data    []string            `json:"data"`
	Default string              `json:"default"`
	Engines []search.EngineInfo `json:"engines"`
}

func (s *Server) handleListSearchEngines(c *gin.Context) {
	c.JSON(http.StatusOK, listSearchEnginesReply{
		Code: http.StatusOK, Msg: "success", Data: s.search.Names(), Default: s.search.Default(), Engines: s.search.EnginesNow(c.Request.Context()),
	})
}

// debugSearchRequest is the body of POST /debug/search.
type debugSearchRequest struct {
	Query            string `json:"query"`
	SearchEngineName string `json:"search_engine_name"`
	TopK             *int   `json:"top_k"`
	SplitResult      bool   `json:"split_result"`
}

// debugSearchReply is what a search found: the raw results, the numbered
// evidence an answer would rest on, and what failed on the way.
type debugSearchReply struct {
	Engine   string         `json:"engine"`
	Query    string         `json:"query"`
	Results  []searchResult `json:"results"` // as the engine returned them, content filled by page reading
	Docs     []searchDoc    `json:"docs"`    // the numbered evidence
	Warnings []string       `json:"warnings,omitempty"`
	Ms       int64          `json:"ms"`
}

// searchResult is one result of a search engine.
type searchResult struct {
	Title     string  `json:"title"`
	URL       string  `json:"url"`
	Snippet   string  `json:"snippet"`
	Engine    string  `json:"engine,omitempty"`
	Score     float64 `json:"score,omitempty"`
	Published string  `json:"published,omitempty"`
	Content   string  `json:"content,omitempty"`
}

// searchDoc is one numbered piece of evidence.
type searchDoc struct {
	N     int     `json:"n"`
	Title string  `json:"title"`
	URL   string  `json:"url"`
	Text  string  `json:"text"`
	Score float64 `json:"score,omitempty"`
}

func wireRetrieval(ret search.Retrieval, ms int64) debugSearchReply {
	out := debugSearchReply{Engine: ret.Engine, Query: ret.Query, Results: make([]searchResult, 0, len(ret.Results)),
		Docs: make([]searchDoc, 0, len(ret.Docs)), Warnings: ret.Warnings, Ms: ms}
	for _, r := range ret.Results {
		out.Results = append(out.Results, searchResult{Title: r.Title, URL: r.URL, Snippet: r.Snippet, Engine: r.Engine,
			Score: r.Score, Published: r.Published, Content: r.Content})
	}
	for _, d := range ret.Docs {
		out.Docs = append(out.Docs, searchDoc{N: d.N, Title: d.Title, URL: d.URL, Text: d.Text, Score: d.Score})
	}
	return out
}

func (s *Server) handleDebugSearch(c *gin.Context, req *debugSearchRequest) {
	topK, err := s.validateSearch(req.Query, req.SearchEngineName, req.TopK)
	if err != nil {
		writeError(c, err)
		return
	}
	start := time.Now()
	ret, err := s.search.Lookup(c.Request.Context(), search.LookupRequest{
		Engine: req.SearchEngineName, Query: req.Query, TopK: topK, Split: req.SplitResult,
	})
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, wireRetrieval(ret, time.Since(start).Milliseconds()))
}

func (r *searchChatRequest) question() string { return r.Query }
