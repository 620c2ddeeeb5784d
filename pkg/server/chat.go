package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/prompts"
)

// historyItem is one message of a client-sent history (Chatchat's History).
type historyItem struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatRequest is the body of POST /chat/chat, Chatchat 0.2's fields.
type chatRequest struct {
	Query          string        `json:"query"`
	ConversationID string        `json:"conversation_id"`
	HistoryLen     *int          `json:"history_len"`
	History        []historyItem `json:"history"`
	Stream         bool          `json:"stream"`
	ModelName      string        `json:"model_name"`
	Temperature    *float32      `json:"temperature"`
	MaxTokens      *int          `json:"max_tokens"`
	PromptName     string        `json:"prompt_name"`
	// Memory names the memory strategy for this request (mixchat's
	// extension); "" means the configured one.
	Memory string `json:"memory"`
}

// chatChunk is one SSE event of a streamed /chat/chat reply. The last event
// has Done set and carries the turn's record.
type chatChunk struct {
	Text           string     `json:"text"`
	MessageID      string     `json:"message_id"`
	Done           bool       `json:"done,omitempty"`
	ConversationID string     `json:"conversation_id,omitempty"`
	TurnID         int64      `json:"turn_id,omitempty"`
	Model          string     `json:"model,omitempty"`
	Extractive     bool       `json:"extractive,omitempty"`
	Usage          *obs.Usage `json:"usage,omitempty"`
	Error          string     `json:"error,omitempty"`
}

// chatReply is the body of a non-streamed /chat/chat reply.
type chatReply struct {
	Text           string    `json:"text"`
	MessageID      string    `json:"message_id"`
	ConversationID string    `json:"conversation_id,omitempty"`
	TurnID         int64     `json:"turn_id,omitempty"`
	Model          string    `json:"model"`
	Extractive     bool      `json:"extractive,omitempty"`
	Usage          obs.Usage `json:"usage"`
}

// validateHistory checks a client-sent history and converts it.
func validateHistory(h []historyItem) ([]llm.Message, error) {
	out := make([]llm.Message, 0, len(h))
	for i, m := range h {
		role := strings.ToLower(strings.TrimSpace(m.Role))
		switch role {
		case "user", "human":
			role = llm.RoleUser
		case "assistant", "ai":
			role = llm.RoleAssistant
		case "system":
		default:
			return nil, errBadRequest("history[%d].role %q must be one of user, assistant, system", i, m.Role)
		}
		out = append(out, llm.Message{Role: role, Content: m.Content})
	}
	return out, nil
}

// validateTuning checks the model tuning fields every chat endpoint shares.
func (s *Server) validateTuning(model string, temperature *float32, maxTokens *int) error {
	if temperature != nil && (*temperature < 0 || *temperature > 2) {
		return errBadRequest("temperature must be between 0 and 2, got %v", *temperature)
	}
	if maxTokens != nil && *maxTokens < 0 {
		return errBadRequest("max_tokens must not be negative, got %d", *maxTokens)
	}
	if _, _, err := s.models.Get(model); err != nil {
		return &Error{Status: http.StatusBadRequest, Msg: "model_name", Err: err}
	}
	return nil
}

func (s *Server) handleChat(c *gin.Context) {
	var req chatRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		writeError(c, errBadRequest("query must not be empty"))
		return
	}
	if err := s.validateTuning(req.ModelName, req.Temperature, req.MaxTokens); err != nil {
		writeError(c, err)
		return
	}
	history, err := validateHistory(req.History)
	if err != nil {
		writeError(c, err)
		return
	}
	if err := s.validMemory(req.Memory); err != nil {
		writeError(c, err)
		return
	}
	if req.PromptName != "" && !prompts.Has(chat.PromptGroup, req.PromptName) {
		writeError(c, errBadRequest("prompt_name %q unknown; available: %s", req.PromptName, strings.Join(prompts.Names(chat.PromptGroup), ", ")))
		return
	}
	historyLen := -1
	if req.HistoryLen != nil {
		historyLen = *req.HistoryLen
	}
	q := mix.Query{Text: req.Query, Model: req.ModelName, Temperature: req.Temperature, PromptName: req.PromptName}
	if req.MaxTokens != nil {
		q.MaxTokens = *req.MaxTokens
	}
	ctx := c.Request.Context()
	if err := s.claimConversation(ctx, req.ConversationID, "llm_chat"); err != nil {
		writeError(c, err)
		return
	}
	if len(history) == 0 && req.ConversationID != "" && historyLen != 0 {
		history, err = s.recall(ctx, req.ConversationID, req.Query, req.Memory, historyLen)
		if err != nil {
			writeError(c, err)
			return
		}
		if q.PromptName == "default" {
			// Chatchat answers from server memory with its with_history
			// prompt whatever prompt_name says; so do we.
			q.PromptName = ""
		}
	} else if q.PromptName == "" {
		q.PromptName = "default"
	}
	q.History = history

	t := turnRecord{conversationID: req.ConversationID, question: req.Query, answerID: uuid.NewString()}
	if req.Stream {
		s.streamAnswer(c, s.chat, q, &t)
		return
	}
	ctx, done := s.replyContext(ctx)
	defer done()
	ans, err := s.chat.Answer(ctx, q, nil)
	if err != nil {
		writeError(c, err)
		return
	}
	t.answer, t.sent, t.resp = ans.Text, ans.Text, ans.Response
	turnID, err := s.storeTurn(ctx, &t)
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, chatReply{
		Text: ans.Text, MessageID: t.messageID(), ConversationID: req.ConversationID, TurnID: turnID,
		Model: ans.Response.Model, Extractive: ans.Response.Extractive, Usage: t.usage,
	})
}

// validMemory checks a request's memory strategy name.
func (s *Server) validMemory(strategy string) error {
	if strategy == "" {
		return nil
	}
	var known []string
	if s.opts.Memory != nil {
		known = s.opts.Memory.Strategies()
	}
	for _, k := range known {
		if k == strategy {
			return nil
		}
	}
	return errBadRequest("memory %q unknown; available: %s", strategy, strings.Join(known, ", "))
}

// recall returns the conversation's history as the model should see it:
// the memory strategy's choice, or the last historyLen turns when
// historyLen >= 0. A conversation that does not exist yet has no history.
func (s *Server) recall(ctx context.Context, conversationID, question, strategy string, historyLen int) ([]llm.Message, error) {
	if s.opts.Memory != nil {
		h, err := s.opts.Memory.Recall(ctx, conversationID, question, strategy, historyLen)
		if err != nil {
			return nil, fmt.Errorf("recall history: %w", err)
		}
		return h, nil
	}
	if historyLen < 0 {
		historyLen = s.opts.HistoryLen
	}
	turns, err := s.store.Turns(ctx, conversationID, historyLen)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recall history: %w", err)
	}
	return memory.History(turns), nil
}

// turnRecord collects what is stored of one exchange.
type turnRecord struct {
	conversationID string
	question       string
	answerID       string
	answer         string // all the model produced
	sent           string // what reached the client
	interrupted    bool
	resp           llm.Response
	extra          map[string]any
	// calls are the responses of every model call the reply took, for
	// pricing; nil means resp alone.
	calls []llm.Response
	// usage is set by storeTurn: the reply's tokens, latency and price.
	usage obs.Usage
}

// messageID is the id a client uses to refer to the reply (feedback): the
// answer's message id, or "" when nothing is stored.
func (t *turnRecord) messageID() string {
	if t.conversationID == "" {
		return ""
	}
	return t.answerID
}

// storeTurn writes question and answer in one transaction when the request
// names a conversation. It runs even when ctx was cancelled (a client that
// went away still gets its turn stored, as interrupted).
func (s *Server) storeTurn(ctx context.Context, t *turnRecord) (int64, error) {
	auth.AddTokens(ctx, t.resp.Usage.TotalTokens) // the key's tokens-per-minute limit
	t.usage = s.messageUsage(ctx, t)
	if t.conversationID == "" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	usage := t.resp.Usage
	extra := map[string]any{"usage": t.usage} // tokens, latency, price
	for k, v := range t.extra {
		extra[k] = v
	}
	meta := memory.Metadata{Source: "llm", Model: t.resp.Model, Extractive: t.resp.Extractive, Usage: &usage, Extra: extra}
	content := t.answer
	if t.interrupted {
		meta.Interrupted = true
		meta.Original = t.answer
		content = t.sent
	}
	turn, err := s.store.AppendTurn(ctx, t.conversationID,
		memory.Message{Role: llm.RoleUser, Content: t.question, Metadata: memory.Metadata{Source: "message"}},
		memory.Message{ID: t.answerID, Role: llm.RoleAssistant, Content: content, Metadata: meta})
	if err != nil {
		return 0, fmt.Errorf("store turn: %w", err)
	}
	if s.opts.Memory != nil {
		s.opts.Memory.Remember(ctx, t.conversationID, turn)
	}
	return turn.ID, nil
}

// storeReply stores the exchange of a single-answerer endpoint
// (knowledge_base_chat, search_engine_chat) when the request names a
// conversation, so the conversation's history shows it. sent is what reached
// the client; when it is shorter than answer the reply was cut short and is
// stored as interrupted. It returns the answer's message id, "" when nothing
// is stored.
func (s *Server) storeReply(ctx context.Context, conversationID, question, from, answer, sent string, resp llm.Response, sources any) (string, error) {
	if conversationID == "" {
		auth.AddTokens(ctx, resp.Usage.TotalTokens) // storeTurn counts them otherwise
		return "", nil
	}
	t := turnRecord{conversationID: conversationID, question: question, answerID: uuid.NewString(),
		answer: answer, sent: sent, interrupted: sent != answer, resp: resp,
		extra: map[string]any{"answerer": from, "sources": sources}}
	if _, err := s.storeTurn(ctx, &t); err != nil {
		return "", err
	}
	return t.answerID, nil
}

// streamAnswer runs a and streams its reply as Chatchat's /chat/chat events,
// then stores the turn. A client that goes away, or a shutdown cutting the
// stream, stops the model and stores what was sent as interrupted.
func (s *Server) streamAnswer(c *gin.Context, a mix.Answerer, q mix.Query, t *turnRecord) {
	ctx, done := s.replyContext(c.Request.Context())
	defer done()
	out := newSSE(c)
	var sent, received strings.Builder
	var writeErr error
	ans, err := a.Answer(ctx, q, func(delta string) error {
		received.WriteString(delta)
		if writeErr = out.Send(chatChunk{Text: delta, MessageID: t.messageID()}); writeErr != nil {
			return writeErr
		}
		sent.WriteString(delta)
		return nil
	})
	t.resp, t.sent, t.answer = ans.Response, sent.String(), received.String()
	if err == nil && ans.Text != "" {
		t.answer = ans.Text
	}
	cut := ctx.Err() != nil || writeErr != nil
	if err != nil && !cut && received.Len() == 0 {
		// The model failed before saying anything: nothing to store.
		if !out.started {
			writeError(c, err)
			return
		}
		_ = out.Send(chatChunk{MessageID: t.messageID(), Error: err.Error(), Done: true})
		return
	}
	t.interrupted = err != nil
	if err != nil && !cut {
		t.extra = map[string]any{"error": err.Error()}
	}
	turnID, storeErr := s.storeTurn(ctx, t)
	if cut {
		if cause := context.Cause(ctx); errors.Is(cause, errShuttingDown) && writeErr == nil {
			_ = out.Send(chatChunk{MessageID: t.messageID(), Error: cause.Error(), Done: true, TurnID: turnID})
		}
		if storeErr != nil {
			s.log.ErrorContext(ctx, "store interrupted turn", "conversation", t.conversationID, "err", storeErr)
		}
		return
	}
	final := chatChunk{MessageID: t.messageID(), Done: true, ConversationID: t.conversationID, TurnID: turnID,
		Model: t.resp.Model, Extractive: t.resp.Extractive, Usage: &t.usage}
	switch {
	case err != nil:
		final.Error = err.Error()
	case storeErr != nil:
		final.Error = storeErr.Error()
	}
	_ = out.Send(final)
}
