package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/turn"
	"github.com/mixchat/mixchat/prompts"
)

// kbChatRequest is Chatchat's knowledge_base_chat body, plus mixchat's
// knowledge_base_names and min_relevance.
type kbChatRequest struct {
	Query string `json:"query"`
	kbRetrieval
	chatchatFields
	// ConversationID, when set, stores the exchange in that conversation
	// (mixchat's extension). A follow-up is made standalone before
	// retrieval against the history sent, else the conversation's; the
	// answer's prompt still sees no history unless sent.
	ConversationID string `json:"conversation_id"`
	// What is recalled of the conversation for that rewrite.
	memoryFields
}

// kbRetrieval are the retrieval fields of knowledge_base_chat and
// search_docs: which knowledge bases, how many chunks, how relevant.
type kbRetrieval struct {
	KnowledgeBase  string   `json:"knowledge_base_name"`
	KnowledgeBases []string `json:"knowledge_base_names"`
	TopK           *int     `json:"top_k"`
	// ScoreThreshold is Chatchat's distance; MinRelevance mixchat's
	// relevance in [0,1], which wins when both are sent.
	ScoreThreshold *float64 `json:"score_threshold"`
	MinRelevance   *float64 `json:"min_relevance"`
}

// params validates the fields: the knowledge bases named, top_k (0 for
// the default) and the minimum relevance.
func (r kbRetrieval) params(s *Server) (names []string, k int, minRel float64, err error) {
	if k, err = topK(r.TopK); err != nil {
		return nil, 0, 0, err
	}
	if minRel, err = s.threshold(r.ScoreThreshold, r.MinRelevance); err != nil {
		return nil, 0, 0, err
	}
	return kbNames(r.KnowledgeBase, r.KnowledgeBases), k, minRel, nil
}

// kbSource is the structured form of one cited chunk (mixchat's addition
// next to Chatchat's markdown docs).
type kbSource struct {
	Index         int     `json:"index"`
	File          string  `json:"file"`
	URL           string  `json:"url"`
	KnowledgeBase string  `json:"knowledge_base"`
	Relevance     float64 `json:"relevance"`
	Score         float64 `json:"score"` // Chatchat distance
	Text          string  `json:"text"`
}

// noDocsNote is Chatchat's docs entry when nothing was found.
const noDocsNote = "<span style='color:red'>未找到相关文档,该回答为大模型自身能力解答！</span>"

// baseURL is the server's address as the client reached it, ending in "/".
func baseURL(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	if p := c.GetHeader("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + c.Request.Host + "/"
}

// kbDocs renders the sources as Chatchat's markdown docs ("出处 [1]
// [file](url) \n\ncontent\n\n") and as structured sources.
func kbDocs(c *gin.Context, rs []kb.Result) ([]string, []kbSource) {
	base := baseURL(c)
	docs := make([]string, 0, len(rs))
	srcs := make([]kbSource, 0, len(rs))
	for i, r := range rs {
		link := base + strings.TrimPrefix(kb.DownloadPath(r.KnowledgeBase, r.File), "/")
		docs = append(docs, fmt.Sprintf("出处 [%d] [%s](%s) \n\n%s\n\n", i+1, r.File, link, r.Text))
		srcs = append(srcs, kbSource{Index: i + 1, File: r.File, URL: link, KnowledgeBase: r.KnowledgeBase,
			Relevance: r.Relevance, Score: kb.RelevanceToDistance(r.Relevance), Text: r.Text})
	}
	if len(docs) == 0 {
		docs = append(docs, noDocsNote)
	}
	return docs, srcs
}

// kbChatParams is what a valid knowledge_base_chat request asks for.
type kbChatParams struct {
	names   []string
	k       int
	minRel  float64
	history []llm.Message
	mem     rewriteSettings
}

// check validates a knowledge_base_chat request (its query checked on
// decoding): its retrieval fields, its model and rewrite fields, then its
// prompt.
func (r kbChatRequest) check(s *Server) (kbChatParams, error) {
	var p kbChatParams
	var err error
	if p.names, p.k, p.minRel, err = r.params(s); err != nil {
		return kbChatParams{}, err
	}
	if p.history, p.mem, err = s.checkRewrite(r.chatchatFields, r.memoryFields); err != nil {
		return kbChatParams{}, err
	}
	if r.PromptName != "" && r.PromptName != "default" && !prompts.Has(kb.PromptGroup, r.PromptName) {
		return kbChatParams{}, errBadRequest("prompt_name %q does not exist for knowledge_base_chat", r.PromptName)
	}
	return p, nil
}

func (s *Server) handleKBChat(c *gin.Context, req *kbChatRequest) {
	p, err := req.check(s)
	if err != nil {
		writeError(c, err)
		return
	}
	// A chat endpoint answers a knowledge base it cannot use with an HTTP
	// status (only /knowledge_base/* keeps Chatchat's 200 with a code).
	for _, n := range p.names {
		exists, err := s.kb.Exists(c.Request.Context(), n)
		if err == nil && !exists {
			err = checkName(n)
		}
		if err == nil {
			err = s.readableKBs(c.Request.Context(), n)
		}
		if err != nil {
			writeError(c, kbChatError(n, err))
			return
		}
	}
	if err := s.claimConversation(c.Request.Context(), req.ConversationID, "kb_chat"); err != nil {
		writeError(c, err)
		return
	}
	creq := kb.ChatRequest{
		Query: req.Query, KnowledgeBases: p.names, TopK: p.k, MinRelevance: p.minRel, History: p.history,
		Model: req.ModelName, Temperature: req.Temperature, PromptName: req.PromptName,
	}
	if req.MaxTokens != nil {
		creq.MaxTokens = *req.MaxTokens
	}
	// The endpoint's own answerer: Chatchat's request as asked (the
	// client's history, the threshold as given) with the standalone
	// question, keeping the chunks found for Chatchat's docs.
	var found []kb.Result
	answer := rag.AnswerFunc(func(ctx context.Context, q rag.Query, fn func(string) error) (rag.Answer, error) {
		creq := creq
		creq.Query = q.Retrieval()
		reply, err := s.kb.Chat(ctx, creq, fn)
		found = reply.Results
		return reply.Answer, err
	})
	w := &kbChatWriter{reply: s.newReply(c, req.Stream)}
	tr := turn.Request{ConversationID: req.ConversationID, AnswerID: newAnswerID(), Query: rag.Query{Text: req.Query, History: p.history},
		From: rag.KB, Answerer: answer, Record: func(res turn.Result) map[string]any {
			w.docs, w.sources = kbDocs(c, found)
			return withStandalone(map[string]any{"answerer": rag.KB, "sources": w.sources}, res)
		}}
	p.mem.apply(&tr)
	s.runTurn(c, tr, w)
}

// kbChatError says why knowledge_base_chat cannot use the knowledge base
// name: a missing name is the request's mistake (400), an unknown one or
// one the caller may not read is not found (404); the rest as writeError
// maps it.
func kbChatError(name string, err error) error {
	switch {
	case errors.Is(err, kb.ErrEmptyName):
		return errBadRequest("knowledge_base_name is required: name the knowledge base to answer from")
	case errors.Is(err, kb.ErrNotFound):
		return errNotFound("no knowledge base named %q", name)
	}
	return err
}

// kbChatDelta is one piece of a streamed knowledge_base_chat answer.
type kbChatDelta struct {
	Answer string `json:"answer"`
}

// kbChatDocs is the last event of a streamed knowledge_base_chat reply
// (fields in the order Chatchat clients have always seen them).
type kbChatDocs struct {
	Docs      []string   `json:"docs"`
	Empty     bool       `json:"empty"`
	Error     string     `json:"error,omitempty"` // why storing the turn failed
	MessageID string     `json:"message_id"`
	Sources   []kbSource `json:"sources"`
	// Reason says why no chunk was used when empty (the best relevance
	// against the threshold), so a refusal can be told from a bad search.
	Reason string `json:"reason,omitempty"`
}

// kbChatReply is the body of a non-streamed knowledge_base_chat reply.
type kbChatReply struct {
	Answer     string     `json:"answer"`
	Docs       []string   `json:"docs"`
	Empty      bool       `json:"empty"`
	Extractive bool       `json:"extractive"`
	MessageID  string     `json:"message_id"`
	Model      string     `json:"model"`
	Sources    []kbSource `json:"sources"`
	Reason     string     `json:"reason,omitempty"` // why no chunk was used, when empty
}

// chatchatError is Chatchat's error body, and the event that ends a
// Chatchat stream that broke off.
type chatchatError struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

// kbChatWriter writes a knowledge_base_chat reply in Chatchat's shapes.
type kbChatWriter struct {
	reply
	docs    []string
	sources []kbSource
}

func (w *kbChatWriter) event(ev turn.Event) error {
	return w.delta(ev, func(text string) any { return kbChatDelta{Answer: text} })
}

func (w *kbChatWriter) done(res turn.Result, err error) {
	mid := res.MessageID()
	if w.out == nil {
		if res.StoreErr != nil {
			writeError(w.c, res.StoreErr)
			return
		}
		w.c.JSON(http.StatusOK, kbChatReply{Answer: res.Text, Docs: w.docs, Sources: w.sources, Empty: res.Answer.Empty,
			Model: res.Response.Model, Extractive: res.Response.Extractive, MessageID: mid, Reason: res.Answer.Reason})
		return
	}
	if err != nil {
		_ = w.out.Send(chatchatError{Code: errorStatus(err), Msg: publicMessage(err)})
		return
	}
	ev := kbChatDocs{Docs: w.docs, Sources: w.sources, Empty: res.Answer.Empty, MessageID: mid, Reason: res.Answer.Reason}
	if res.StoreErr != nil {
		ev.Error = publicMessage(res.StoreErr)
	}
	_ = w.out.Send(ev)
}

func (w *kbChatWriter) fail(_ turn.Result, err error) {
	w.end(err, func() any { return chatchatError{Code: errorStatus(err), Msg: publicMessage(err)} })
}

func (r *kbChatRequest) question() string { return r.Query }

func (r *kbChatRequest) validate() error {
	if strings.TrimSpace(r.Query) == "" {
		return errBadRequest("query is empty")
	}
	return nil
}
