package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The conversations and messages of SQLStore (migration 0001 of each
// engine).

var _ Store = (*SQLStore)(nil)

// Close does nothing: the engine that opened the database closes it.
// (The engines' stores embed SQLStore and close their connections.)
func (s *SQLStore) Close() error { return nil }

// CreateConversation implements Store.
func (s *SQLStore) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	c = prepareConversation(c)
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO conversations (id, name, chat_type, user_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		c.ID, c.Name, c.ChatType, c.UserID, c.CreatedAt, c.UpdatedAt)
	if err != nil {
		return Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Conversation{}, fmt.Errorf("create conversation: %w", err)
	} else if n == 0 {
		return Conversation{}, fmt.Errorf("create conversation %s: %w", c.ID, ErrConflict)
	}
	return c, nil
}

const conversationColumns = `id, name, chat_type, user_id, created_at, updated_at`

func scanConversation(sc interface{ Scan(...any) error }) (Conversation, error) {
	var c Conversation
	err := sc.Scan(&c.ID, &c.Name, &c.ChatType, &c.UserID, &c.CreatedAt, &c.UpdatedAt)
	return c, err
}

// Conversation implements Store.
func (s *SQLStore) Conversation(ctx context.Context, id string) (Conversation, error) {
	c, err := scanConversation(s.reader().QueryRowContext(ctx, s.q(`SELECT `+conversationColumns+` FROM conversations WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, err)
	}
	return c, nil
}

// conversations runs a query listing conversations.
func (s *SQLStore) conversations(ctx context.Context, query string, args ...any) ([]Conversation, error) {
	return queryRows(ctx, s.reader(), s.q(query), args, scanConversation)
}

// Conversations implements Store.
func (s *SQLStore) Conversations(ctx context.Context, userID string) ([]Conversation, error) {
	query := `SELECT ` + conversationColumns + ` FROM conversations`
	var args []any
	if userID != "" {
		query += ` WHERE user_id = ?`
		args = append(args, userID)
	}
	cs, err := s.conversations(ctx, query+` ORDER BY updated_at DESC, created_at DESC, id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return cs, nil
}

// RenameConversation implements Store.
func (s *SQLStore) RenameConversation(ctx context.Context, id, name string) error {
	res, err := s.write.ExecContext(ctx, s.q(`UPDATE conversations SET name = ? WHERE id = ?`), name, id)
	if err != nil {
		return fmt.Errorf("rename conversation %s: %w", id, err)
	}
	return affectedOne(res, "rename conversation "+id)
}

// DeleteConversation implements Store; the messages go by ON DELETE CASCADE.
func (s *SQLStore) DeleteConversation(ctx context.Context, id string) error {
	res, err := s.write.ExecContext(ctx, s.q(`DELETE FROM conversations WHERE id = ?`), id)
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	return affectedOne(res, "delete conversation "+id)
}

// AppendTurn implements Store. The upsert of the conversation's counter
// row increments its turn counter (creating the conversation if missing)
// and takes the row's write lock until commit (SQLite: the database's), so
// concurrent appends to one conversation get consecutive turn ids in
// commit order and a rolled-back append leaves no gap.
func (s *SQLStore) AppendTurn(ctx context.Context, conversationID string, question, answer Message) (Turn, error) {
	q, a, err := prepareTurn(conversationID, question, answer)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	qmeta, err := encodeMetadata(q.Metadata)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	ameta, err := encodeMetadata(a.Metadata)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	turnID, err := s.appendTurn(ctx, q, a, string(qmeta), string(ameta))
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	q.TurnID, a.TurnID = turnID, turnID
	return Turn{ID: turnID, Question: q, Answer: a}, nil
}

// txTimeout bounds a transaction of AppendTurn once it has begun, its
// COMMIT included, which runs even when the caller's context has ended.
const txTimeout = time.Minute

// messageColumns are the columns scanMessage reads.
func (s *SQLStore) messageColumns() string {
	return `id, conversation_id, turn_id, seq, role, content, timestamp, ` + s.jsonText("metadata")
}

func scanMessage(sc interface{ Scan(...any) error }) (messageRow, error) {
	var (
		r    messageRow
		meta []byte
	)
	if err := sc.Scan(&r.ID, &r.ConversationID, &r.TurnID, &r.seq, &r.Role, &r.Content, &r.Timestamp, &meta); err != nil {
		return r, err
	}
	m, err := decodeMetadata(meta)
	if err != nil {
		return r, fmt.Errorf("message %s: %w", r.ID, err)
	}
	r.Metadata = m
	return r, nil
}

// Turns implements Store.
func (s *SQLStore) Turns(ctx context.Context, conversationID string, limit int) ([]Turn, error) {
	query := `SELECT ` + s.messageColumns() + ` FROM messages WHERE conversation_id = ?`
	args := []any{conversationID}
	if limit > 0 {
		// From the limit-th last question on.
		query += ` AND turn_id >= coalesce((SELECT turn_id FROM messages WHERE conversation_id = ? AND seq = 0
			ORDER BY turn_id DESC LIMIT 1 OFFSET ?), 0)`
		args = append(args, conversationID, limit-1)
	}
	ms, err := s.messages(ctx, query+` ORDER BY turn_id, seq`, args...)
	if err != nil {
		return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
	}
	if len(ms) == 0 {
		var one int
		err := s.reader().QueryRowContext(ctx, s.q(`SELECT 1 FROM conversations WHERE id = ?`), conversationID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
		}
	}
	return assembleTurns(ms), nil
}

// LastTurnID returns the id of the conversation's newest turn (of its
// newest question, as Turns(ctx, id, 1) returns it), 0 when it has none,
// ErrNotFound when the conversation does not exist. It reads no message: a
// conversation cached in memory is checked with it before each recall for
// turns stored elsewhere (another replica).
func (s *SQLStore) LastTurnID(ctx context.Context, conversationID string) (int64, error) {
	var id sql.NullInt64
	err := s.reader().QueryRowContext(ctx, s.q(`SELECT (SELECT max(turn_id) FROM messages WHERE conversation_id = ? AND seq = 0)
		FROM conversations WHERE id = ?`), conversationID, conversationID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("last turn of %s: %w", conversationID, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("last turn of %s: %w", conversationID, err)
	}
	return id.Int64, nil
}

func (s *SQLStore) messages(ctx context.Context, query string, args ...any) ([]messageRow, error) {
	return queryRows(ctx, s.reader(), s.q(query), args, scanMessage)
}

// Message implements Store.
func (s *SQLStore) Message(ctx context.Context, messageID string) (Message, error) {
	r, err := scanMessage(s.read.QueryRowContext(ctx, s.q(`SELECT `+s.messageColumns()+` FROM messages WHERE id = ?`), messageID))
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", messageID, err)
	}
	return r.Message, nil
}

// SetFeedback implements Store. It replaces metadata.feedback in place,
// leaving the rest of the metadata as it is.
func (s *SQLStore) SetFeedback(ctx context.Context, messageID string, f Feedback) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	res, err := s.write.ExecContext(ctx, s.q(s.d.SetFeedback), string(b), messageID)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	return affectedOne(res, "set feedback on "+messageID)
}
