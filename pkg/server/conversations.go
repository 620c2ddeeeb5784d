package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/memory"
)

// conversation is a conversation on the wire.
type conversation struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ChatType  string `json:"chat_type"` // "llm_chat", "kb_chat", "search_chat", "mix_chat"
	UserID    string `json:"user_id"`
	CreatedAt int64  `json:"created_at"` // Unix milliseconds
	UpdatedAt int64  `json:"updated_at"` // Unix milliseconds of the last turn
}

func wireConversation(c memory.Conversation) conversation {
	return conversation{ID: c.ID, Name: c.Name, ChatType: c.ChatType, UserID: c.UserID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// conversationList is the body of GET /conversations.
type conversationList struct {
	Conversations []conversation `json:"conversations"`
}

// message is a stored message on the wire; its metadata is the stored
// format.
type message struct {
	ID             string          `json:"message_id"`
	ConversationID string          `json:"conversation_id"`
	TurnID         int64           `json:"turn_id"`
	Role           string          `json:"role"`
	Content        string          `json:"content"`
	Timestamp      int64           `json:"timestamp"` // Unix milliseconds
	Metadata       memory.Metadata `json:"metadata"`
}

func wireMessage(m memory.Message) message {
	return message{ID: m.ID, ConversationID: m.ConversationID, TurnID: m.TurnID, Role: m.Role, Content: m.Content,
		Timestamp: m.Timestamp, Metadata: m.Metadata}
}

// messageList is the body of GET /conversations/:id/messages (fields in
// the order clients have always seen them).
type messageList struct {
	ConversationID string    `json:"conversation_id"`
	Messages       []message `json:"messages"`
}

// memoryContents is the body of GET /conversations/:id/memory.
type memoryContents struct {
	Contents       []memoryItem `json:"contents"`
	ConversationID string       `json:"conversation_id"`
}

// chatchatReply is Chatchat's BaseResponse: code, msg and data.
type chatchatReply[T any] struct {
	Code int    `json:"code"`
	Data T      `json:"data"`
	Msg  string `json:"msg"`
}

// feedbackReply is the body of POST /chat/feedback.
type feedbackReply struct {
	Code      int    `json:"code"`
	MessageID string `json:"message_id"`
	Msg       string `json:"msg"`
}

// chatTypes are the conversation kinds a client may create.
var chatTypes = []string{"llm_chat", "kb_chat", "search_chat", "mix_chat"}

type createConversationRequest struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	ChatType string `json:"chat_type"`
	UserID   string `json:"user_id"`
}

func validChatType(t string) bool {
	for _, c := range chatTypes {
		if c == t {
			return true
		}
	}
	return false
}

// validate applies the default chat type (mix_chat) and checks the fields.
func (r *createConversationRequest) validate() error {
	if r.ChatType == "" {
		r.ChatType = "mix_chat"
	}
	if !validChatType(r.ChatType) {
		return errBadRequest("chat_type %q must be one of %s", r.ChatType, strings.Join(chatTypes, ", "))
	}
	if err := errors.Join(validConversationID(r.ID), validConversationName(r.Name)); err != nil {
		return errBadRequest("%v", err)
	}
	return nil
}

func (s *Server) handleCreateConversation(c *gin.Context, req *createConversationRequest) {
	userID, err := callerUserID(c.Request.Context(), req.UserID)
	if err != nil {
		writeError(c, err)
		return
	}
	conv, err := s.store.CreateConversation(c.Request.Context(), memory.Conversation{ID: req.ID, Name: req.Name, ChatType: req.ChatType, UserID: userID})
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusCreated, wireConversation(conv))
}

// handleListConversations lists conversations, most recently updated first;
// ?user_id= narrows to one user, ?q= to names containing the text.
func (s *Server) handleListConversations(c *gin.Context) {
	userID, err := callerUserID(c.Request.Context(), c.Query("user_id"))
	if err != nil {
		writeError(c, err)
		return
	}
	convs, err := s.store.Conversations(c.Request.Context(), userID)
	if err != nil {
		writeError(c, err)
		return
	}
	if q := strings.ToLower(strings.TrimSpace(c.Query("q"))); q != "" {
		kept := convs[:0]
		for _, cv := range convs {
			if strings.Contains(strings.ToLower(cv.Name), q) {
				kept = append(kept, cv)
			}
		}
		convs = kept
	}
	out := conversationList{Conversations: make([]conversation, 0, len(convs))}
	for _, cv := range convs {
		out.Conversations = append(out.Conversations, wireConversation(cv))
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) handleGetConversation(c *gin.Context) {
	conv, err := s.store.Conversation(c.Request.Context(), c.Param("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, wireConversation(conv))
}

type renameConversationRequest struct {
	Name *string `json:"name"`
}

func (r *renameConversationRequest) validate() error {
	if r.Name != nil {
		if err := validConversationName(*r.Name); err != nil {
			return err
		}
	}
	if r.Name == nil || strings.TrimSpace(*r.Name) == "" {
		return errBadRequest("name must not be empty")
	}
	return nil
}

func (s *Server) handleRenameConversation(c *gin.Context, req *renameConversationRequest) {
	ctx := c.Request.Context()
	if err := s.store.RenameConversation(ctx, c.Param("id"), strings.TrimSpace(*req.Name)); err != nil {
		writeError(c, err)
		return
	}
	conv, err := s.store.Conversation(ctx, c.Param("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, wireConversation(conv))
}

func (s *Server) handleDeleteConversation(c *gin.Context) {
	if err := s.store.DeleteConversation(c.Request.Context(), c.Param("id")); err != nil {
		writeError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// limitParam reads ?limit=, 0 (all) when absent.
func limitParam(c *gin.Context) (int, error) {
	v := c.Query("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, errBadRequest("limit must be a non-negative integer, got %q", v)
	}
	return n, nil
}

// handleListMessages lists a conversation's messages in order: each turn's
// question then its answer.
func (s *Server) handleListMessages(c *gin.Context) {
	limit, err := limitParam(c)
	if err != nil {
		writeError(c, err)
		return
	}
	turns, err := s.store.Turns(c.Request.Context(), c.Param("id"), limit)
	if err != nil {
		writeError(c, err)
		return
	}
	out := messageList{ConversationID: c.Param("id"), Messages: make([]message, 0, 2*len(turns))}
	for _, t := range turns {
		out.Messages = append(out.Messages, wireMessage(t.Question), wireMessage(t.Answer))
	}
	c.JSON(http.StatusOK, out)
}

// memoryItem is one entry of a conversation's short-term memory.
type memoryItem struct {
	Role      string          `json:"role"`
	Content   string          `json:"content"`
	TurnID    int64           `json:"turn_id"`
	Timestamp int64           `json:"timestamp"`
	Metadata  memory.Metadata `json:"metadata"`
}

// handleMemory returns the conversation's short-term memory: the turns the
// model sees on the next question by default.
func (s *Server) handleMemory(c *gin.Context) {
	ctx := c.Request.Context()
	if _, err := s.store.Conversation(ctx, c.Param("id")); err != nil {
		writeError(c, err)
		return
	}
	turns, err := s.store.Turns(ctx, c.Param("id"), s.opts.HistoryLen)
	if err != nil {
		writeError(c, err)
		return
	}
	items := make([]memoryItem, 0, 2*len(turns))
	for _, t := range turns {
		for _, m := range []memory.Message{t.Question, t.Answer} {
			items = append(items, memoryItem{Role: m.Role, Content: m.Content, TurnID: t.ID, Timestamp: m.Timestamp, Metadata: m.Metadata})
		}
	}
	c.JSON(http.StatusOK, memoryContents{ConversationID: c.Param("id"), Contents: items})
}

type feedbackRequest struct {
	MessageID string `json:"message_id"`
	Score     *int   `json:"score"`
	Reason    string `json:"reason"`
}

func (r *feedbackRequest) validate() error {
	switch {
	case r.MessageID == "":
		return errBadRequest("message_id must not be empty")
	case r.Score == nil || *r.Score < 0 || *r.Score > 100:
		return errBadRequest("score must be an integer from 0 to 100")
	case len(r.Reason) > 4096:
		return errBadRequest("reason must be at most 4096 bytes")
	}
	return nil
}

// handleFeedback records a rating of a reply (Chatchat 0.2's /chat/feedback).
func (s *Server) handleFeedback(c *gin.Context, req *feedbackRequest) {
	if err := s.checkMessage(c.Request.Context(), req.MessageID); err != nil {
		writeError(c, err)
		return
	}
	if err := s.store.SetFeedback(c.Request.Context(), req.MessageID, memory.Feedback{Score: *req.Score, Reason: req.Reason}); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, feedbackReply{Code: 200, Msg: "已反馈聊天记录 " + req.MessageID, MessageID: req.MessageID})
}

// modelInfo describes one configured model.
type modelInfo struct {
	Name       string `json:"name"`
	Default    bool   `json:"default"`
	Extractive bool   `json:"extractive"`
}

func (s *Server) handleListModels(c *gin.Context) {
	names := s.models.Names()
	out := make([]modelInfo, 0, len(names))
	for _, n := range names {
		m, _, err := s.models.Get(n)
		if err != nil {
			continue
		}
		x, _ := m.(interface{ Extractive() bool })
		out = append(out, modelInfo{Name: n, Default: n == s.models.Default(), Extractive: x != nil && x.Extractive()})
	}
	c.JSON(http.StatusOK, chatchatReply[[]modelInfo]{Code: 200, Msg: "success", Data: out})
}
