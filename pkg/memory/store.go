// Package memory keeps conversations: the conversation store (Store, with
// its SQL implementation SQLStore, which pkg/store/sqlite opens on a file by
// default and pkg/store/postgres on PostgreSQL for several machines), turns
// written atomically, and the memory strategies that decide which part of a
// conversation's history a model sees.
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

// Conversation is one conversation's record. (The HTTP API's shape of it
// is the server's.)
type Conversation struct {
	ID        string
	Name      string
	ChatType  string // "llm_chat", "kb_chat", "search_chat", "mix_chat"
	UserID    string
	CreatedAt int64 // Unix milliseconds
	UpdatedAt int64 // Unix milliseconds of the last turn
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
	ID             string
	ConversationID string
	TurnID         int64  // shared by a question and its answer; increasing per conversation
	Role           string // llm.RoleUser, llm.RoleAssistant, llm.RoleSystem
	Content        string
	Timestamp      int64 // Unix milliseconds
	Metadata       Metadata
}

// Turn is a question and its answer.
type Turn struct {
	ID       int64
	Question Message
	Answer   Message
}

// Store keeps conversations and their turns. Implementations are safe for
// concurrent use, from several processes sharing one database included.
// SQLStore is the implementation, on SQLite or PostgreSQL
// (pkg/store/sqlite, pkg/store/postgres).
//
// It has more than four methods because it is the whole record of
// conversations the server exposes (create, read, list, rename, delete,
// feedback) besides the two a turn needs (AppendTurn, Turns); splitting it
// would leave every implementation and most callers with all the parts.
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
