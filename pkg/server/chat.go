package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/turn"
	"github.com/mixchat/mixchat/prompts"
)

// historyItem is one message of a client-sent history (Chatchat's History).
type historyItem struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatchatFields are the fields every Chatchat chat request carries: the
// client's history, streaming, and the model and its tuning.
type chatchatFields struct {
	History     []historyItem `json:"history"`
	Stream      bool          `json:"stream"`
	ModelName   string        `json:"model_name"`
	Temperature *float32      `json:"temperature"`
	MaxTokens   *int          `json:"max_tokens"`
	PromptName  string        `json:"prompt_name"`
}

// check validates the model fields and returns the client's history.
func (f chatchatFields) check(s *Server) ([]llm.Message, error) {
	if err := s.validateTuning(f.ModelName, f.Temperature, f.MaxTokens); err != nil {
		return nil, err
	}
	return validateHistory(f.History)
}

// query is the answerers' query for question with these fields.
func (f chatchatFields) query(question string, history []llm.Message) rag.Query {
	q := rag.Query{Text: question, History: history, Model: f.ModelName, Temperature: f.Temperature, PromptName: f.PromptName}
	if f.MaxTokens != nil {
		q.MaxTokens = *f.MaxTokens
	}
	return q
}

// chatRequest is the body of POST /chat/chat, Chatchat 0.2's fields.
type chatRequest struct {
	Query          string `json:"query"`
	ConversationID string `json:"conversation_id"`
	chatchatFields
	// history_len, and mixchat's memory and window_k.
	memoryFields
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

func (s *Server) handleChat(c *gin.Context, req *chatRequest) {
	history, err := req.check(s)
	if err != nil {
		writeError(c, err)
		return
	}
	historyLen, strategy, windowK, err := req.resolve(s)
	if err != nil {
		writeError(c, err)
		return
	}
	if req.PromptName != "" && !prompts.Has(chat.PromptGroup, req.PromptName) {
		writeError(c, errBadRequest("prompt_name %q unknown; available: %s", req.PromptName, strings.Join(prompts.Names(chat.PromptGroup), ", ")))
		return
	}
	q := req.query(req.Query, history)
	if err := s.claimConversation(c.Request.Context(), req.ConversationID, "llm_chat"); err != nil {
		writeError(c, err)
		return
	}
	tr := turn.Request{ConversationID: req.ConversationID, AnswerID: newAnswerID(), Query: q, HistoryLen: historyLen,
		Memory: strategy, WindowK: windowK, From: rag.LLM, Answerer: s.chat}
	if tr.Recalls() {
		if q.PromptName == "default" {
			// Chatchat answers from server memory with its with_history
			// prompt whatever prompt_name says; so do we.
			tr.Query.PromptName = ""
		}
	} else if q.PromptName == "" {
		tr.Query.PromptName = "default"
	}
	s.runTurn(c, tr, &chatWriter{reply: s.newReply(c, req.Stream), messageID: turn.MessageID(req.ConversationID, tr.AnswerID)})
}

// chatWriter writes a /chat/chat reply: chatChunk events, or one chatReply.
type chatWriter struct {
	reply
	messageID string
}

func (w *chatWriter) event(ev turn.Event) error {
	return w.delta(ev, func(text string) any { return chatChunk{Text: text, MessageID: w.messageID} })
}

func (w *chatWriter) done(res turn.Result, err error) {
	if w.out == nil {
		if res.StoreErr != nil {
			writeError(w.c, res.StoreErr)
			return
		}
		w.c.JSON(http.StatusOK, chatReply{
			Text: res.Text, MessageID: w.messageID, ConversationID: res.ConversationID, TurnID: res.TurnID,
			Model: res.Response.Model, Extractive: res.Response.Extractive, Usage: res.Usage,
		})
		return
	}
	final := chatChunk{MessageID: w.messageID, Done: true, ConversationID: res.ConversationID, TurnID: res.TurnID,
		Model: res.Response.Model, Extractive: res.Response.Extractive, Usage: &res.Usage}
	switch {
	case err != nil:
		final.Error = err.Error()
	case res.StoreErr != nil:
		final.Error = res.StoreErr.Error()
	}
	_ = w.out.Send(final)
}

func (w *chatWriter) fail(res turn.Result, err error) {
	w.end(err, func() any {
		return chatChunk{MessageID: w.messageID, Error: err.Error(), Done: true, TurnID: res.TurnID}
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

func (r *chatRequest) question() string { return r.Query }

func (r *chatRequest) validate() error { return requireQuery(r.Query) }
