// Package memory keeps conversations: the conversation store (SQLite by
// default, PostgreSQL for several machines), turns written atomically, and
// the memory strategies that decide which part of a conversation's history a
// model sees.
package memory

import (
	"context"
	"errors"

	"github.com/mixchat/mixchat/pkg/llm"
)

// ErrNotFound is returned when a conversation or message does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned when a conversation id is already taken.
var ErrConflict = errors.New("already exists")

// Conversation is one conversation's record.
type Conversation struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ChatType  string `json:"chat_type"` // "llm_chat", "kb_chat", "search_chat", "mix_chat"
	UserID    string `json:"user_id"`
	CreatedAt int64  `json:"created_at"` // Unix milliseconds
	UpdatedAt int64  `json:"updated_at"` // Unix milliseconds of the last turn
}

// Feedback is a user's rating of an assistant message.
type Feedback struct {
	Score  int    `json:"score"` // 0-100
	Reason string `json:"reason,omitempty"`
}

// Metadata is what mixchat records about a message beyond its text.
type Metadata struct {
	// Source says where the message came from: "message", "asr", "command",
	// "llm", "greeting", "silence".
	Source string `json:"source,omitempty"`
	// Interrupted marks an assistant reply cut short (client disconnect,
	// shutdown); Content then holds what was actually sent and Original the
	// full text the model produced.
	Interrupted bool       `json:"interrupted,omitempty"`
	Original    string     `json:"original,omitempty"`
	Model       string     `json:"model,omitempty"`
	Extractive  bool       `json:"extractive,omitempty"`
	Usage       *llm.Usage `json:"usage,omitempty"`
	Feedback    *Feedback  `json:"feedback,omitempty"`
	// Extra holds answerer-specific records (standalone question,
	// intermediate answers, sources, timings) as raw JSON objects by key.
	Extra map[string]any `json:"extra,omitempty"`
}

// Message is one stored message.
type Message struct {
	ID             string   `json:"message_id"`
	ConversationID string   `json:"conversation_id"`
	TurnID         int64    `json:"turn_id"` // shared by a question and its answer; increasing per conversation
	Role           string   `json:"role"`    // llm.RoleUser, llm.RoleAssistant, llm.RoleSystem
	Content        string   `json:"content"`
	Timestamp      int64    `json:"timestamp"` // Unix milliseconds
	Metadata       Metadata `json:"metadata"`
}

// Turn is a question and its answer.
type Turn struct {
	ID       int64   `json:"turn_id"`
	Question Message `json:"question"`
	Answer   Message `json:"answer"`
}

// Store keeps conversations and their turns. Implementations are safe for
// concurrent use, from several processes sharing one database included.
//
// Why more than four methods: it is the storage contract a database engine
// implements whole (SQLite, PostgreSQL) and the conformance suite checks
// whole (storetest); the conversation operations and the atomic turn
// operations must agree on one schema and one transaction model.
type Store interface {
	// CreateConversation stores c; an empty c.ID is filled with a new id and
	// an empty CreatedAt with now. ErrConflict if the id exists.
	CreateConversation(ctx context.Context, c Conversation) (Conversation, error)
	// Conversation returns one conversation or ErrNotFound.
	Conversation(ctx context.Context, id string) (Conversation, error)
	// Conversations lists a user's conversations, most recently updated
	// first; userID "" lists every user's.
	Conversations(ctx context.Context, userID string) ([]Conversation, error)
	RenameConversation(ctx context.Context, id, name string) error
	// DeleteConversation removes the conversation and all its messages.
	DeleteConversation(ctx context.Context, id string) error

	// AppendTurn stores a question and its answer in one transaction,
	// assigning the next turn id of the conversation (creating the
	// conversation if it does not exist), message ids where empty and
	// timestamps where zero. It returns the turn as stored. A turn is stored
	// whole or not at all: when ctx ends during the call, either the turn is
	// stored and the error is nil, or nothing is stored and the error says
	// why. A message id already taken gives ErrConflict.
	AppendTurn(ctx context.Context, conversationID string, question, answer Message) (Turn, error)
	// Turns returns the last limit turns in chronological order (limit <= 0:
	// all). ErrNotFound if the conversation does not exist.
	Turns(ctx context.Context, conversationID string, limit int) ([]Turn, error)
	// Message returns one message by id or ErrNotFound.
	Message(ctx context.Context, messageID string) (Message, error)
	// SetFeedback records feedback on a message; ErrNotFound if it does not exist.
	SetFeedback(ctx context.Context, messageID string, f Feedback) error

	Close() error
}
