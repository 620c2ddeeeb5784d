package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/llm"
)

// What the SQLite and PostgreSQL stores share: ids, defaults, metadata
// encoding and the assembly of turns from message rows.

// seqQuestion and seqAnswer are the values of messages.seq.
const (
	seqQuestion = 0
	seqAnswer   = 1
)

// newID returns a new conversation or message id: a UUIDv7, so ids made
// later sort later and index inserts stay local.
func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source does.
		return uuid.NewString()
	}
	return id.String()
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// prepareConversation fills c's defaults for CreateConversation.
func prepareConversation(c Conversation) Conversation {
	if c.ID == "" {
		c.ID = newID()
	}
	if c.CreatedAt == 0 {
		c.CreatedAt = nowMillis()
	}
	if c.UpdatedAt == 0 {
		c.UpdatedAt = c.CreatedAt
	}
	return c
}

// prepareTurn fills the defaults of a turn's messages for AppendTurn: the
// conversation id, roles (user, assistant), message ids and timestamps.
func prepareTurn(conversationID string, q, a Message) (Message, Message, error) {
	if conversationID == "" {
		return q, a, errors.New("empty conversation id")
	}
	now := nowMillis()
	q.ConversationID, a.ConversationID = conversationID, conversationID
	if q.Role == "" {
		q.Role = llm.RoleUser
	}
	if a.Role == "" {
		a.Role = llm.RoleAssistant
	}
	if q.Role == a.Role {
		return q, a, fmt.Errorf("question and answer have the same role %q", q.Role)
	}
	if q.ID == "" {
		q.ID = newID()
	}
	if a.ID == "" {
		a.ID = newID()
	}
	if q.ID == a.ID {
		return q, a, fmt.Errorf("message id %q: %w", q.ID, ErrConflict)
	}
	if q.Timestamp == 0 {
		q.Timestamp = now
	}
	if a.Timestamp == 0 {
		a.Timestamp = max(now, q.Timestamp)
	}
	return q, a, nil
}

func encodeMetadata(m Metadata) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return b, nil
}

func decodeMetadata(b []byte) (Metadata, error) {
	var m Metadata
	if len(b) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode metadata: %w", err)
	}
	return m, nil
}

// messageRow is one row of the messages table as read.
type messageRow struct {
	Message
	seq int
}

// assembleTurns groups rows ordered by (turn_id, seq) into turns.
func assembleTurns(rows []messageRow) []Turn {
	turns := make([]Turn, 0, len(rows)/2)
	for _, r := range rows {
		if len(turns) == 0 || turns[len(turns)-1].ID != r.TurnID {
			turns = append(turns, Turn{ID: r.TurnID})
		}
		t := &turns[len(turns)-1]
		if r.seq == seqQuestion {
			t.Question = r.Message
		} else {
			t.Answer = r.Message
		}
	}
	return turns
}
