package server

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/memory"
)

// LongTermMemory is what the memory endpoints need besides Recaller:
// closing conversations into their users' long-term memory, reading and
// editing that memory, and the system messages of a running conversation.
// Options.Memory provides it when it has these methods (memory.Manager
// does); otherwise the endpoints answer 503.
//
// Why six methods: one per memory endpoint (close, read, set and delete a
// user's memory, read and set system messages), all answered by the same
// manager and enabled together, so one optional ability checked once at
// start instead of six.
type LongTermMemory interface {
	CloseConversation(ctx context.Context, conversationID string) (memory.Closed, error)
	UserMemory(ctx context.Context, userID string) (memory.UserMemory, error)
	SetUserMemory(ctx context.Context, userID, summary string, facts []string) (memory.UserMemory, error)
	DeleteUserMemory(ctx context.Context, userID string) error
	SystemMessages(ctx context.Context, conversationID string) ([]string, error)
	SetSystemMessages(ctx context.Context, conversationID string, msgs []string) error
}

// Limits of what a client may write into memory.
const (
	maxMemorySummaryBytes = 16 << 10
	maxMemoryFacts        = 200
	maxMemoryFactBytes    = 2 << 10
	maxSystemMessages     = 20
	maxSystemBytes        = 16 << 10
)

// handleCloseConversation ends a conversation: its turns are consolidated
// into its user's long-term memory.
func (s *Server) handleCloseConversation(c *gin.Context) {
	lt := s.longTerm()
	closed, err := lt.CloseConversation(c.Request.Context(), c.Param("id"))
	writeResult(c, closed, err)
}

type systemMessages struct {
	ConversationID string   `json:"conversation_id"`
	Messages       []string `json:"messages"`
}

// handleGetSystem returns the system messages the conversation's model
// sees first.
func (s *Server) handleGetSystem(c *gin.Context) {
	lt := s.longTerm()
	msgs, err := lt.SystemMessages(c.Request.Context(), c.Param("id"))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, systemMessages{ConversationID: c.Param("id"), Messages: msgs})
}

// systemRequest is the body of PUT /conversations/:id/system.
type systemRequest struct {
	Messages *[]string `json:"messages"`
}

// validate checks the messages and trims them.
func (r *systemRequest) validate() error {
	if r.Messages == nil {
		return errBadRequest("messages must be a list of strings")
	}
	msgs := *r.Messages
	for i, m := range msgs {
		m = strings.TrimSpace(m)
		if m == "" {
			return errBadRequest("messages[%d] is empty", i)
		}
		if len(m) > maxSystemBytes || !utf8.ValidString(m) {
			return errBadRequest("messages[%d] must be valid UTF-8 of at most %d bytes", i, maxSystemBytes)
		}
		msgs[i] = m
	}
	if len(msgs) > maxSystemMessages {
		return errBadRequest("at most %d system messages, got %d", maxSystemMessages, len(msgs))
	}
	return nil
}

// handlePutSystem replaces the system messages of a running conversation:
// {"messages": ["...", ...]} (an empty list removes them).
func (s *Server) handlePutSystem(c *gin.Context, req *systemRequest) {
	lt := s.longTerm()
	msgs := *req.Messages
	if err := lt.SetSystemMessages(c.Request.Context(), c.Param("id"), msgs); err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, systemMessages{ConversationID: c.Param("id"), Messages: msgs})
}

// handleGetUserMemory returns a user's long-term memory (empty when none).
func (s *Server) handleGetUserMemory(c *gin.Context) {
	lt := s.longTerm()
	mem, err := lt.UserMemory(c.Request.Context(), c.Param("id"))
	writeResult(c, mem, err)
}

// userMemoryRequest is the body of PUT /users/:id/memory.
type userMemoryRequest struct {
	Summary *string  `json:"summary"`
	Facts   []string `json:"facts"`
}

func (r *userMemoryRequest) validate() error {
	if r.Summary == nil && r.Facts == nil {
		return errBadRequest("send summary and/or facts")
	}
	if r.Summary == nil {
		r.Summary = new(string) // facts alone: the summary is emptied
	}
	if len(*r.Summary) > maxMemorySummaryBytes || !utf8.ValidString(*r.Summary) {
		return errBadRequest("summary must be valid UTF-8 of at most %d bytes", maxMemorySummaryBytes)
	}
	if len(r.Facts) > maxMemoryFacts {
		return errBadRequest("at most %d facts, got %d", maxMemoryFacts, len(r.Facts))
	}
	for i, f := range r.Facts {
		if len(f) > maxMemoryFactBytes || !utf8.ValidString(f) {
			return errBadRequest("facts[%d] must be valid UTF-8 of at most %d bytes", i, maxMemoryFactBytes)
		}
	}
	return nil
}

// handlePutUserMemory replaces a user's long-term memory:
// {"summary": "...", "facts": ["...", ...]}.
func (s *Server) handlePutUserMemory(c *gin.Context, req *userMemoryRequest) {
	lt := s.longTerm()
	mem, err := lt.SetUserMemory(c.Request.Context(), c.Param("id"), *req.Summary, req.Facts)
	writeResult(c, mem, err)
}

// handleDeleteUserMemory forgets a user's long-term memory.
func (s *Server) handleDeleteUserMemory(c *gin.Context) {
	lt := s.longTerm()
	if err := lt.DeleteUserMemory(c.Request.Context(), c.Param("id")); err != nil {
		writeError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
