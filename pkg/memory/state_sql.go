package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// The StateStore of SQLStore: the memory_state and user_memory tables of
// migration 0002, in the same database as the conversations.

// stateRow holds the JSON columns of memory_state as read.
type stateRow struct {
	st                      State
	entities, triples, syst []byte
}

func (r *stateRow) decode() (State, error) {
	st := r.st
	if len(r.entities) > 0 {
		if err := json.Unmarshal(r.entities, &st.Digest.Entities); err != nil {
			return State{}, fmt.Errorf("decode entities: %w", err)
		}
	}
	if len(r.triples) > 0 {
		if err := json.Unmarshal(r.triples, &st.Digest.Triples); err != nil {
			return State{}, fmt.Errorf("decode triples: %w", err)
		}
	}
	if r.syst != nil {
		st.SystemSet = true
		if err := json.Unmarshal(r.syst, &st.System); err != nil {
			return State{}, fmt.Errorf("decode system messages: %w", err)
		}
	}
	return st, nil
}

// encodeList encodes a slice as a JSON array ("[]" for nil).
func encodeList[T any](v []T) (string, error) {
	if v == nil {
		return "[]", nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func encodeDigest(d Digest) (entities, triples string, err error) {
	if entities, err = encodeList(d.Entities); err != nil {
		return "", "", fmt.Errorf("encode entities: %w", err)
	}
	if triples, err = encodeList(d.Triples); err != nil {
		return "", "", fmt.Errorf("encode triples: %w", err)
	}
	return entities, triples, nil
}

// State implements StateStore.
func (s *SQLStore) State(ctx context.Context, conversationID string) (State, error) {
	var r stateRow
	d := &r.st.Digest
	err := s.reader().QueryRowContext(ctx, s.q(`SELECT summary, through, `+s.jsonText("entities")+`, `+s.jsonText("triples")+`,
			extracted_through, digest_updated_at, `+s.jsonText("system")+`, closed_at, consolidated_through
		FROM memory_state WHERE conversation_id = ?`), conversationID).
		Scan(&d.Summary, &d.Through, &r.entities, &r.triples, &d.ExtractedThrough, &d.UpdatedAt, &r.syst, &r.st.ClosedAt, &r.st.ConsolidatedThrough)
	if errors.Is(err, sql.ErrNoRows) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("memory state of %s: %w", conversationID, err)
	}
	st, err := r.decode()
	if err != nil {
		return State{}, fmt.Errorf("memory state of %s: %w", conversationID, err)
	}
	return st, nil
}

// SaveDigest implements StateStore.
func (s *SQLStore) SaveDigest(ctx context.Context, conversationID string, d Digest) error {
	ents, trips, err := encodeDigest(d)
	if err != nil {
		return fmt.Errorf("save digest of %s: %w", conversationID, err)
	}
	j := s.d.JSONArg
	res, err := s.writer().ExecContext(ctx, s.q(`INSERT INTO memory_state (conversation_id, summary, through, entities, triples, extracted_through, digest_updated_at)
		SELECT ?, ?, ?, `+j+`, `+j+`, ?, ? WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?)
		ON CONFLICT (conversation_id) DO UPDATE SET summary = excluded.summary, through = excluded.through,
			entities = excluded.entities, triples = excluded.triples, extracted_through = excluded.extracted_through,
			digest_updated_at = excluded.digest_updated_at`),
		conversationID, d.Summary, d.Through, ents, trips, d.ExtractedThrough, d.UpdatedAt, conversationID)
	if err != nil {
		return fmt.Errorf("save digest of %s: %w", conversationID, err)
	}
	return affectedOne(res, "save digest of "+conversationID)
}

// SetSystem implements StateStore.
func (s *SQLStore) SetSystem(ctx context.Context, conversationID string, msgs []string) error {
	b, err := encodeList(msgs)
	if err != nil {
		return fmt.Errorf("set system messages of %s: %w", conversationID, err)
	}
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO memory_state (conversation_id, system)
		SELECT ?, `+s.d.JSONArg+` WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?)
		ON CONFLICT (conversation_id) DO UPDATE SET system = excluded.system`), conversationID, b, conversationID)
	if err != nil {
		return fmt.Errorf("set system messages of %s: %w", conversationID, err)
	}
	return affectedOne(res, "set system messages of "+conversationID)
}

// MarkClosed implements StateStore.
func (s *SQLStore) MarkClosed(ctx context.Context, conversationID string, closedAt, through int64) error {
	res, err := s.write.ExecContext(ctx, s.q(`INSERT INTO memory_state (conversation_id, closed_at, consolidated_through)
		SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?)
		ON CONFLICT (conversation_id) DO UPDATE SET closed_at = excluded.closed_at,
			consolidated_through = `+s.d.Greatest+`(memory_state.consolidated_through, excluded.consolidated_through)`),
		conversationID, closedAt, through, conversationID)
	if err != nil {
		return fmt.Errorf("close conversation %s: %w", conversationID, err)
	}
	return affectedOne(res, "close conversation "+conversationID)
}

// IdleConversations implements StateStore.
func (s *SQLStore) IdleConversations(ctx context.Context, before int64, limit int) ([]Conversation, error) {
	cs, err := s.conversations(ctx, `SELECT c.id, c.name, c.chat_type, c.user_id, c.created_at, c.updated_at
		FROM conversations c LEFT JOIN memory_state m ON m.conversation_id = c.id
		WHERE c.user_id <> '' AND c.updated_at < ? AND c.last_turn_id > coalesce(m.consolidated_through, 0)
		ORDER BY c.updated_at, c.id LIMIT ?`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("idle conversations: %w", err)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	return cs, nil
}

// UserMemory implements StateStore.
func (s *SQLStore) UserMemory(ctx context.Context, userID string) (UserMemory, error) {
	m := UserMemory{UserID: userID}
	var facts []byte
	err := s.read.QueryRowContext(ctx, s.q(`SELECT summary, `+s.jsonText("facts")+`, version, updated_at FROM user_memory WHERE user_id = ?`), userID).
		Scan(&m.Summary, &facts, &m.Version, &m.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil
	}
	if err != nil {
		return UserMemory{}, fmt.Errorf("memory of user %s: %w", userID, err)
	}
	if err := json.Unmarshal(facts, &m.Facts); err != nil {
		return UserMemory{}, fmt.Errorf("memory of user %s: decode facts: %w", userID, err)
	}
	return m, nil
}

// SaveUserMemory implements StateStore.
func (s *SQLStore) SaveUserMemory(ctx context.Context, m UserMemory) (UserMemory, error) {
	facts, err := encodeList(m.Facts)
	if err != nil {
		return UserMemory{}, fmt.Errorf("save memory of user %s: %w", m.UserID, err)
	}
	now := nowMillis()
	var res sql.Result
	if m.Version == 0 {
		res, err = s.write.ExecContext(ctx, s.q(`INSERT INTO user_memory (user_id, summary, facts, version, updated_at) VALUES (?, ?, `+s.d.JSONArg+`, 1, ?)
			ON CONFLICT (user_id) DO NOTHING`), m.UserID, m.Summary, facts, now)
	} else {
		res, err = s.write.ExecContext(ctx, s.q(`UPDATE user_memory SET summary = ?, facts = `+s.d.JSONArg+`, version = version + 1, updated_at = ?
			WHERE user_id = ? AND version = ?`), m.Summary, facts, now, m.UserID, m.Version)
	}
	if err != nil {
		return UserMemory{}, fmt.Errorf("save memory of user %s: %w", m.UserID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return UserMemory{}, fmt.Errorf("save memory of user %s: %w", m.UserID, err)
	} else if n == 0 {
		return UserMemory{}, fmt.Errorf("save memory of user %s: version %d is stale: %w", m.UserID, m.Version, ErrConflict)
	}
	m.Version++
	m.UpdatedAt = now
	return m, nil
}

// DeleteUserMemory implements StateStore.
func (s *SQLStore) DeleteUserMemory(ctx context.Context, userID string) error {
	if _, err := s.write.ExecContext(ctx, s.q(`DELETE FROM user_memory WHERE user_id = ?`), userID); err != nil {
		return fmt.Errorf("delete memory of user %s: %w", userID, err)
	}
	return nil
}
