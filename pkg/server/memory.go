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

// handlePutSystem replaces the system messages of a running conversation:
// {"messages": ["...", ...]} (an empty list removes them).
func (s *Server) handlePutSystem(c *gin.Context) {
	lt := s.longTerm()
	var req struct {
		Messages *[]string `json:"messages"`
	}
	if !bindJSON(c, &req) {
		return
	}
	if req.Messages == nil {
		writeError(c, errBadRequest("messages must be a list of strings"))
		return
	}
	msgs := make([]string, 0, len(*req.Messages))
	for i, m := range *req.Messages {
		m = strings.TrimSpace(m)
		if m == "" {
			writeError(c, errBadRequest("messages[%d] is empty", i))
			return
		}
		if len(m) > maxSystemBytes || !utf8.ValidString(m) {
			writeError(c, errBadRequest("messages[%d] must be valid UTF-8 of at most %d bytes", i, maxSystemBytes))
			return
		}
		msgs = append(msgs, m)
	}
	if len(msgs) > maxSystemMessages {
		writeError(c, errBadRequest("at most %d system messages, got %d", maxSystemMessages, len(msgs)))
		return
	}
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

// handlePutUserMemory replaces a user's long-term memory:
// {"summary": "...", "facts": ["...", ...]}.
func (s *Server) handlePutUserMemory(c *gin.Context) {
	lt := s.longTerm()
	var req struct {
		Summary *string  `json:"summary"`
		Facts   []string `json:"facts"`
	}
	if !bindJSON(c, &req) {
		return
	}
	if req.Summary == nil && req.Facts == nil {
		writeError(c, errBadRequest("send summary and/or facts"))
		return
	}
	summary := ""
	if req.Summary != nil {
		summary = *req.Summary
	}
	if len(summary) > maxMemorySummaryBytes || !utf8.ValidString(summary) {
		writeError(c, errBadRequest("summary must be valid UTF-8 of at most %d bytes", maxMemorySummaryBytes))
		return
	}
	if len(req.Facts) > maxMemoryFacts {
		writeError(c, errBadRequest("at most %d facts, got %d", maxMemoryFacts, len(req.Facts)))
		return
	}
	for i, f := range req.Facts {
		if len(f) > maxMemoryFactBytes || !utf8.ValidString(f) {
			writeError(c, errBadRequest("facts[%d] must be valid UTF-8 of at most %d bytes", i, maxMemoryFactBytes))
			return
		}
	}
	mem, err := lt.SetUserMemory(c.Request.Context(), c.Param("id"), summary, req.Facts)
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
