package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/turn"
)

// mixRequest is the body of POST /chat/mix_chat: Chatchat's chat fields,
// the knowledge-base and search fields of its knowledge_base_chat and
// search_engine_chat, and mixchat's answerers and fusion.
type mixRequest struct {
	Query          string        `json:"query"`
	ConversationID string        `json:"conversation_id"`
	HistoryLen     *int          `json:"history_len"`
	History        []historyItem `json:"history"`
	mixOptions
	Stream      bool     `json:"stream"`
	Temperature *float32 `json:"temperature"`
	MaxTokens   *int     `json:"max_tokens"`
}

// mixOptions are the mix_chat fields the OpenAI-compatible API takes in its
// "mixchat" extra field too.
type mixOptions struct {
	KnowledgeBaseName  string   `json:"knowledge_base_name"`
	KnowledgeBaseNames []string `json:"knowledge_base_names"`
	SearchEngineName   string   `json:"search_engine_name"`
	TopK               *int     `json:"top_k"`
	// ScoreThreshold is Chatchat's: a distance in [0, 2], smaller is
	// closer (1 by default in Chatchat).
	ScoreThreshold *float64 `json:"score_threshold"`
	ModelName      string   `json:"model_name"`
	PromptName     string   `json:"prompt_name"`
	// Answerers switches answerers for this request ("llm", "kb",
	// "search"); empty means the deployment's.
	Answerers []string `json:"answerers"`
	Fusion    string   `json:"fusion"` // "answers" or "context"; "" = configured
	Memory    string   `json:"memory"` // memory strategy; "" = configured
	WindowK   *int     `json:"window_k"`
}

// mixEvent is one SSE event of a streamed /chat/mix_chat reply.
type mixEvent struct {
	Type     string    `json:"type"` // status, standalone, answer, delta, docs, done, error
	Answerer string    `json:"answerer,omitempty"`
	State    string    `json:"state,omitempty"`
	Ms       *int64    `json:"ms,omitempty"`
	Text     string    `json:"text,omitempty"`
	Error    string    `json:"error,omitempty"`
	TimedOut bool      `json:"timed_out,omitempty"`
	Empty    bool      `json:"empty,omitempty"`
	Docs     []rag.Doc `json:"docs,omitempty"`
	// done and error events
	MessageID      string             `json:"message_id,omitempty"`
	ConversationID string             `json:"conversation_id,omitempty"`
	TurnID         int64              `json:"turn_id,omitempty"`
	Code           int                `json:"code,omitempty"` // error: the HTTP status the error maps to
	Standalone     string             `json:"standalone,omitempty"`
	Model          string             `json:"model,omitempty"`
	Extractive     bool               `json:"extractive,omitempty"`
	Fusion         string             `json:"fusion,omitempty"`
	Fused          *bool              `json:"fused,omitempty"`
	Failed         []string           `json:"failed,omitempty"`
	Usage          *obs.Usage         `json:"usage,omitempty"`
	Timings        map[string]float64 `json:"timings,omitempty"`
}

func wireEvent(ev turn.Event) mixEvent {
	w := mixEvent{Type: ev.Type, Answerer: ev.Answerer, State: ev.State, Text: ev.Text, Error: ev.Error,
		TimedOut: ev.TimedOut, Empty: ev.Empty, Docs: ev.Docs}
	if ev.Type == turn.EventDocs && w.Docs == nil {
		w.Docs = []rag.Doc{}
	}
	if ev.State == mix.StateDone || ev.State == mix.StateFailed || ev.Type == turn.EventStandalone {
		ms := ev.Ms
		w.Ms = &ms
	}
	return w
}

// mixAnswer is one intermediate answer in a non-streamed reply.
type mixAnswer struct {
	From     string       `json:"from"`
	Text     string       `json:"text"`
	Sources  []rag.Source `json:"sources,omitempty"`
	Empty    bool         `json:"empty,omitempty"`
	Model    string       `json:"model,omitempty"`
	Usage    llm.Usage    `json:"usage"`
	Ms       int64        `json:"ms"`
	Error    string       `json:"error,omitempty"`
	TimedOut bool         `json:"timed_out,omitempty"`
}

// mixReply is the body of a non-streamed /chat/mix_chat reply.
type mixReply struct {
	Text           string             `json:"text"`
	MessageID      string             `json:"message_id"`
	ConversationID string             `json:"conversation_id,omitempty"`
	TurnID         int64              `json:"turn_id,omitempty"`
	Standalone     string             `json:"standalone,omitempty"`
	Answers        []mixAnswer        `json:"answers"`
	Docs           []rag.Doc          `json:"docs"`
	Model          string             `json:"model"`
	Extractive     bool               `json:"extractive,omitempty"`
	Fusion         string             `json:"fusion"`
	Fused          bool               `json:"fused"`
	Failed         []string           `json:"failed,omitempty"`
	Usage          obs.Usage          `json:"usage"`
	Timings        map[string]float64 `json:"timings"`
}

func wireAnswers(os []mix.Outcome) []mixAnswer {
	out := make([]mixAnswer, len(os))
	for i, o := range os {
		out[i] = mixAnswer{From: o.From, Text: o.Text, Sources: o.Sources, Empty: o.Empty, Model: o.Model,
			Usage: o.Usage, Ms: o.Ms, Error: o.Error, TimedOut: o.TimedOut}
	}
	return out
}

func failedAnswerers(res mix.Result) []string {
	var out []string
	for _, o := range res.Answers {
		if !o.OK() {
			out = append(out, o.From)
		}
	}
	return out
}

// buildMix validates what every mix endpoint shares and turns it into a
// turn with the Mixer's answerers. history is the client's (nil when it
// sent none).
func (s *Server) buildMix(ctx context.Context, query, conversationID string, historyLen int, history []llm.Message,
	o mixOptions, temperature *float32, maxTokens *int) (turn.Request, error) {
	if s.mixer == nil {
		return turn.Request{}, errUnavailable("mix_chat is not configured on this server")
	}
	if err := s.checkQuery(query); err != nil {
		return turn.Request{}, err
	}
	if err := requireQuery(query); err != nil {
		return turn.Request{}, err
	}
	if err := s.validateTuning(o.ModelName, temperature, maxTokens); err != nil {
		return turn.Request{}, err
	}
	historyLen, strategy, windowK, err := memoryFields{HistoryLen: &historyLen, Memory: o.Memory, WindowK: o.WindowK}.resolve(s)
	if err != nil {
		return turn.Request{}, err
	}
	if o.TopK != nil && (*o.TopK < 1 || *o.TopK > 100) {
		return turn.Request{}, errBadRequest("top_k must be between 1 and 100, got %d", *o.TopK)
	}
	if o.ScoreThreshold != nil && (*o.ScoreThreshold < 0 || *o.ScoreThreshold > 2) {
		return turn.Request{}, errBadRequest("score_threshold must be between 0 and 2 (a distance, smaller is closer), got %v", *o.ScoreThreshold)
	}
	kbs := o.KnowledgeBaseNames
	if o.KnowledgeBaseName != "" {
		kbs = append([]string{o.KnowledgeBaseName}, kbs...)
	}
	for _, name := range kbs {
		if err := kb.ValidName(name); err != nil {
			return turn.Request{}, errBadRequest("knowledge_base_name %q: %v", name, err)
		}
	}
	if err := s.namedKBs(ctx, kbs...); errors.Is(err, errKBNotReadable) {
		return turn.Request{}, &Error{Status: http.StatusNotFound, Err: err}
	} else if err != nil {
		return turn.Request{}, err
	}
	q := rag.Query{Text: query, History: history, Model: o.ModelName, Temperature: temperature,
		KnowledgeBases: kbs, SearchEngine: o.SearchEngineName}
	if maxTokens != nil {
		q.MaxTokens = *maxTokens
	}
	if o.TopK != nil {
		q.TopK = *o.TopK
	}
	if o.ScoreThreshold != nil {
		q.ScoreThreshold = kb.DistanceToRelevance(*o.ScoreThreshold)
	}
	mreq := &mix.Request{Answerers: o.Answerers, Fusion: o.Fusion, PromptName: o.PromptName}
	if len(o.Answerers) == 0 {
		mreq.Answerers = s.withoutIdleKB(kbs)
	}
	mreq.Query = q
	if err := s.mixer.Check(*mreq); err != nil {
		return turn.Request{}, err
	}
	if err := s.claimConversation(ctx, conversationID, "mix_chat"); err != nil {
		return turn.Request{}, err
	}
	return turn.Request{ConversationID: conversationID, AnswerID: newAnswerID(), Query: q, HistoryLen: historyLen,
		Memory: strategy, WindowK: windowK, Mix: mreq}, nil
}

// withoutIdleKB returns the mix's default answerers without the
// knowledge-base one when it has nothing to search: the request names no
// knowledge base and none is configured as the default (a server with no
// knowledge base at all). nil keeps the defaults.
func (s *Server) withoutIdleKB(kbs []string) []string {
	if len(kbs) > 0 || s.kb == nil || len(s.kb.Config().DefaultKnowledgeBases) > 0 {
		return nil
	}
	names := s.mixer.Answerers()
	kept := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == rag.KB })
	if len(kept) == len(names) || len(kept) == 0 {
		return nil
	}
	return kept
}

func (s *Server) handleMixChat(c *gin.Context, body *mixRequest) {
	history, err := validateHistory(body.History)
	if err != nil {
		writeError(c, err)
		return
	}
	historyLen := -1
	if body.HistoryLen != nil {
		historyLen = *body.HistoryLen
	}
	req, err := s.buildMix(c.Request.Context(), body.Query, body.ConversationID, historyLen, history, body.mixOptions, body.Temperature, body.MaxTokens)
	if err != nil {
		writeError(c, err)
		return
	}
	s.runTurn(c, req, &mixWriter{reply: s.newReply(c, body.Stream), messageID: turn.MessageID(req.ConversationID, req.AnswerID)})
}

// mixWriter writes a /chat/mix_chat reply: mixEvent events, or one
// mixReply.
type mixWriter struct {
	reply
	messageID string
}

func (w *mixWriter) event(ev turn.Event) error {
	if b, ok := textEvent(ev); ok {
		return w.out.raw(b)
	}
	return w.out.Send(wireEvent(ev))
}

// textEvent encodes a piece of text (a delta or answer_delta event, most
// of a stream's events) as json.Marshal(wireEvent(ev)) does, without
// reflecting over mixEvent's fields; ok is false for any other event.
func textEvent(ev turn.Event) (b []byte, ok bool) {
	if (ev.Type != turn.EventDelta && ev.Type != turn.EventAnswerDelta) || ev.State != "" || ev.Ms != 0 ||
		ev.Error != "" || ev.TimedOut || ev.Empty || ev.Docs != nil {
		return nil, false
	}
	b = make([]byte, 0, len(ev.Text)+len(ev.Answerer)+48)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, ev.Type)
	if ev.Answerer != "" {
		b = append(b, `,"answerer":`...)
		b = appendJSONString(b, ev.Answerer)
	}
	if ev.Text != "" {
		b = append(b, `,"text":`...)
		b = appendJSONString(b, ev.Text)
	}
	return append(b, '}'), true
}

// appendJSONString appends s as encoding/json writes a string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

func (w *mixWriter) done(t turn.Result, err error) {
	res := t.Mix
	if w.out == nil {
		if t.StoreErr != nil {
			writeError(w.c, t.StoreErr)
			return
		}
		docs := res.Docs
		if docs == nil {
			docs = []rag.Doc{}
		}
		w.c.JSON(http.StatusOK, mixReply{
			Text: res.Text, MessageID: w.messageID, ConversationID: t.ConversationID, TurnID: t.TurnID,
			Standalone: res.Standalone, Answers: wireAnswers(res.Answers), Docs: docs,
			Model: res.Response.Model, Extractive: res.Response.Extractive, Fusion: res.Mode, Fused: res.Fused,
			Failed: failedAnswerers(res), Usage: t.Usage, Timings: res.Timings.Millis(),
		})
		return
	}
	problem := ""
	switch {
	case err != nil:
		problem = publicMessage(err)
	case t.StoreErr != nil:
		problem = publicMessage(t.StoreErr)
	}
	fused := res.Fused
	usage := t.Usage
	_ = w.out.Send(mixEvent{Type: "done", MessageID: w.messageID, ConversationID: t.ConversationID, TurnID: t.TurnID,
		Standalone: res.Standalone, Model: res.Response.Model, Extractive: res.Response.Extractive, Fusion: res.Mode,
		Fused: &fused, Failed: failedAnswerers(res), Usage: &usage, Timings: res.Timings.Millis(), Error: problem})
}

func (w *mixWriter) fail(_ turn.Result, err error) {
	w.end(err, func() any {
		return mixEvent{Type: "error", MessageID: w.messageID, Error: publicMessage(err), Code: errorStatus(err)}
	})
}

// condenseRequest is the body of POST /debug/condense.
type condenseRequest struct {
	Query          string        `json:"query"`
	History        []historyItem `json:"history"`
	ConversationID string        `json:"conversation_id"`
	memoryFields
}

// condenseReply is the reply of POST /debug/condense.
type condenseReply struct {
	Query      string        `json:"query"`
	Standalone string        `json:"standalone"`
	Context    string        `json:"context"`
	Rewritten  bool          `json:"rewritten"`
	Usage      llm.Usage     `json:"usage"`
	Ms         float64       `json:"ms"`
	History    []llm.Message `json:"history"`
}

func (r *condenseRequest) question() string { return r.Query }

func (r *condenseRequest) validate() error { return requireQuery(r.Query) }

func (s *Server) handleCondense(c *gin.Context, body *condenseRequest) {
	choice, err := body.choice(s)
	if err != nil {
		writeError(c, err)
		return
	}
	history, err := validateHistory(body.History)
	if err != nil {
		writeError(c, err)
		return
	}
	cd, history, err := s.condense(c.Request.Context(), body.Query, body.ConversationID, choice, history)
	if err != nil {
		writeError(c, err)
		return
	}
	if history == nil {
		history = []llm.Message{}
	}
	c.JSON(http.StatusOK, condenseReply{Query: body.Query, Standalone: cd.Standalone, Context: cd.Context, Rewritten: cd.Rewritten,
		Usage: cd.Usage, Ms: float64(cd.Elapsed.Microseconds()) / 1000, History: history})
}

// condense rewrites question into a standalone question: against history
// when the client sent one, else against the conversation's recalled
// history (the memory settings c, as in /chat/chat). It returns the
// question as asked when there is no history or no condenser. It serves
// /debug/condense and /knowledge_base/search_docs with history.
func (s *Server) condense(ctx context.Context, question, conversationID string, c memory.Choice, history []llm.Message) (mix.Condensed, []llm.Message, error) {
	if err := s.checkConversation(ctx, conversationID); err != nil {
		return mix.Condensed{}, nil, err
	}
	if len(history) == 0 && conversationID != "" && c.Strategy != memory.NoHistory {
		h, err := s.turns.Recall(ctx, conversationID, question, c)
		if err != nil {
			return mix.Condensed{}, nil, err
		}
		history = h
	}
	if s.mixer == nil {
		return mix.Condensed{Standalone: question}, history, nil
	}
	start := time.Now()
	cd, err := s.mixer.Condense(ctx, history, question)
	if cd.Elapsed == 0 {
		cd.Elapsed = time.Since(start)
	}
	return cd, history, err
}

// searchDocsCondensed is the reply of POST /knowledge_base/search_docs when
// the request carries history or conversation_id: the docs found for the
// standalone question, and that question. (Without them search_docs keeps
// Chatchat's bare list.)
type searchDocsCondensed struct {
	Docs       []kbDoc `json:"docs"`
	Query      string  `json:"query"`      // the question as sent
	Standalone string  `json:"standalone"` // the question searched with
	Context    string  `json:"context,omitempty"`
	Rewritten  bool    `json:"rewritten"`
	Ms         float64 `json:"ms"` // the rewrite's duration
	// Error says why the question could not be rewritten; it was searched
	// as sent.
	Error string `json:"error,omitempty"`
}

// condenseSearch is the follow-up condensing of search_docs. With neither
// history nor conversationID it returns nil: search the query as sent.
// Otherwise it rewrites query against the client's history, or else the
// conversation's recalled history (the memory strategy's), with the
// Mixer's condenser, as /chat/mix_chat does before retrieval. A rewrite
// that fails leaves the query as sent, the failure in Error; a bad history,
// a conversation of another user or a failed recall is an error.
func (s *Server) condenseSearch(ctx context.Context, query, conversationID string, items []historyItem, c memory.Choice) (*searchDocsCondensed, error) {
	if len(items) == 0 && conversationID == "" {
		return nil, nil
	}
	history, err := validateHistory(items)
	if err != nil {
		return nil, err
	}
	if err := s.checkConversation(ctx, conversationID); err != nil {
		return nil, err
	}
	if len(history) == 0 && conversationID != "" {
		if history, err = s.turns.Recall(ctx, conversationID, query, c); err != nil {
			return nil, err
		}
	}
	out := &searchDocsCondensed{Docs: []kbDoc{}, Query: query, Standalone: query}
	if s.mixer == nil {
		return out, nil
	}
	cd, err := s.mixer.Condense(ctx, history, query)
	out.Ms = float64(cd.Elapsed.Microseconds()) / 1000
	switch {
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case err != nil:
		out.Error = publicMessage(err)
	default:
		out.Standalone, out.Context, out.Rewritten = cd.Standalone, cd.Context, cd.Rewritten
	}
	return out, nil
}
