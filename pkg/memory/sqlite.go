package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver (pure Go)
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite is a Store in one SQLite database file, for a single machine.
//
// The database runs in WAL mode, so reads never wait for the writer. Writes
// go through a single connection: the process's writers queue for it in Go
// instead of contending for SQLite's write lock. Write transactions begin
// IMMEDIATE and connections wait up to busyTimeout for the lock, so several
// processes (or several SQLite values) on one file serialise their writes
// too. Commits use synchronous=NORMAL: durable across a crash of the
// process, while a power loss may undo the last commits.
type SQLite struct {
	write *sql.DB // one connection
	read  *sql.DB // query_only connections; the same *sql.DB as write for ":memory:"
}

var _ Store = (*SQLite)(nil)

// busyTimeout is how long, in milliseconds, a connection waits for another
// connection's lock before failing with SQLITE_BUSY.
const busyTimeout = 10000

// OpenSQLite opens (creating if needed) the SQLite database at path and
// migrates its schema. The directory of path is created if missing. The path
// ":memory:" gives a private in-memory database on a single connection.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" {
		return nil, errors.New("open sqlite: empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open sqlite %s: path contains '?'", path)
	}
	if path == ":memory:" {
		db, err := openSQLiteDB(ctx, path, false)
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		s := &SQLite{write: db, read: db}
		if err := s.migrate(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		return s, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
	}
	// The writer opens first: its connection switches the file to WAL mode
	// before any reader connects.
	w, err := openSQLiteDB(ctx, path, false)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := openSQLiteDB(ctx, path, true)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s := &SQLite{write: w, read: r}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return s, nil
}

func openSQLiteDB(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.Itoa(busyTimeout))
	q.Set("_foreign_keys", "1")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		if path != ":memory:" {
			q.Set("_journal_mode", "WAL")
		}
		q.Set("_synchronous", "NORMAL")
		q.Set("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	if readOnly {
		n := max(4, runtime.GOMAXPROCS(0))
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	} else {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
	}
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := connectSQLite(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// connectSQLite opens db's first connection. Connections opening a new file
// at once can fail with SQLITE_BUSY while one of them switches it to WAL
// mode, a step busy_timeout does not cover; such attempts are repeated until
// the busy timeout has passed.
func connectSQLite(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout * time.Millisecond)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := db.PingContext(ctx)
		var serr *sqlite.Error
		if err == nil || !errors.As(err, &serr) || serr.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (s *SQLite) migrate(ctx context.Context) error {
	ms, err := loadMigrations("sqlite")
	if err != nil {
		return err
	}
	tx, err := s.write.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrating process at a time
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	applied := map[int64]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, nowMillis()); err != nil {
			return fmt.Errorf("migrate %s: %w", m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *SQLite) Close() error {
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

// CreateConversation implements Store.
func (s *SQLite) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	c = prepareConversation(c)
	res, err := s.write.ExecContext(ctx, `INSERT INTO conversations (id, name, chat_type, user_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
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

const sqliteConversationColumns = `id, name, chat_type, user_id, created_at, updated_at`

// Conversation implements Store.
func (s *SQLite) Conversation(ctx context.Context, id string) (Conversation, error) {
	var c Conversation
	err := s.read.QueryRowContext(ctx, `SELECT `+sqliteConversationColumns+` FROM conversations WHERE id = ?`, id).
		Scan(&c.ID, &c.Name, &c.ChatType, &c.UserID, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, err)
	}
	return c, nil
}

// Conversations implements Store.
func (s *SQLite) Conversations(ctx context.Context, userID string) ([]Conversation, error) {
	query := `SELECT ` + sqliteConversationColumns + ` FROM conversations`
	var args []any
	if userID != "" {
		query += ` WHERE user_id = ?`
		args = append(args, userID)
	}
	query += ` ORDER BY updated_at DESC, created_at DESC, id DESC`
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	cs := []Conversation{}
	for rows.Next() {
		var c Conversation
		if err := rows.Scan(&c.ID, &c.Name, &c.ChatType, &c.UserID, &c.CreatedAt, &c.UpdatedAt); err != nil {
			return nil, fmt.Errorf("list conversations: %w", err)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return cs, nil
}

// RenameConversation implements Store.
func (s *SQLite) RenameConversation(ctx context.Context, id, name string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE conversations SET name = ? WHERE id = ?`, name, id)
	if err != nil {
		return fmt.Errorf("rename conversation %s: %w", id, err)
	}
	return affectedOne(res, "rename conversation "+id)
}

// DeleteConversation implements Store; the messages go by ON DELETE CASCADE.
func (s *SQLite) DeleteConversation(ctx context.Context, id string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM conversations WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	return affectedOne(res, "delete conversation "+id)
}

func affectedOne(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return nil
}

// AppendTurn implements Store. The conversation's turn counter is
// incremented (the conversation created if missing) and both messages are
// inserted in one IMMEDIATE transaction.
func (s *SQLite) AppendTurn(ctx context.Context, conversationID string, question, answer Message) (Turn, error) {
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

	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	defer tx.Rollback()
	var turnID int64
	err = tx.QueryRowContext(ctx, `INSERT INTO conversations (id, created_at, updated_at, last_turn_id) VALUES (?, ?, ?, 1)
		ON CONFLICT (id) DO UPDATE SET last_turn_id = last_turn_id + 1, updated_at = max(updated_at, excluded.updated_at)
		RETURNING last_turn_id`, conversationID, q.Timestamp, a.Timestamp).Scan(&turnID)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	q.TurnID, a.TurnID = turnID, turnID
	res, err := tx.ExecContext(ctx, `INSERT INTO messages (id, conversation_id, turn_id, seq, role, content, timestamp, metadata)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		q.ID, conversationID, turnID, seqQuestion, q.Role, q.Content, q.Timestamp, string(qmeta),
		a.ID, conversationID, turnID, seqAnswer, a.Role, a.Content, a.Timestamp, string(ameta))
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	} else if n != 2 {
		return Turn{}, fmt.Errorf("append turn: message id %s or %s: %w", q.ID, a.ID, ErrConflict)
	}
	if err := tx.Commit(); err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	return Turn{ID: turnID, Question: q, Answer: a}, nil
}

const sqliteMessageColumns = `id, conversation_id, turn_id, seq, role, content, timestamp, metadata`

func scanSQLiteMessage(sc interface{ Scan(...any) error }) (messageRow, error) {
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
func (s *SQLite) Turns(ctx context.Context, conversationID string, limit int) ([]Turn, error) {
	query := `SELECT ` + sqliteMessageColumns + ` FROM messages WHERE conversation_id = ?1`
	args := []any{conversationID}
	if limit > 0 {
		// From the limit-th last question on.
		query += ` AND turn_id >= coalesce((SELECT turn_id FROM messages WHERE conversation_id = ?1 AND seq = 0
			ORDER BY turn_id DESC LIMIT 1 OFFSET ?2), 0)`
		args = append(args, limit-1)
	}
	query += ` ORDER BY turn_id, seq`
	rows, err := s.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
	}
	defer rows.Close()
	var ms []messageRow
	for rows.Next() {
		r, err := scanSQLiteMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
		}
		ms = append(ms, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
	}
	if len(ms) == 0 {
		var one int
		err := s.read.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, conversationID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
		}
	}
	return assembleTurns(ms), nil
}

// Message implements Store.
func (s *SQLite) Message(ctx context.Context, messageID string) (Message, error) {
	r, err := scanSQLiteMessage(s.read.QueryRowContext(ctx,
		`SELECT `+sqliteMessageColumns+` FROM messages WHERE id = ?`, messageID))
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
func (s *SQLite) SetFeedback(ctx context.Context, messageID string, f Feedback) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	res, err := s.write.ExecContext(ctx, `UPDATE messages SET metadata = json_set(metadata, '$.feedback', json(?)) WHERE id = ?`,
		string(b), messageID)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	return affectedOne(res, "set feedback on "+messageID)
}
