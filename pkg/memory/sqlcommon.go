package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

// SQLStore is the Store (and StateStore) of the SQL engines, written once
// on database/sql: pkg/store/sqlite and pkg/store/postgres open the
// database, migrate its schema (their migrations/ folders) and hand it
// over with their SQLDialect. The queries are written with "?"
// placeholders and portable SQL (ON CONFLICT ... DO UPDATE, RETURNING);
// the few places where the engines disagree are the dialect's.
type SQLStore struct {
	write *sql.DB // the connection(s) that write
	read  *sql.DB // the connections that read; may be write
	d     SQLDialect
	stmts sync.Map // stmtKey → *sql.Stmt
	group groupCommit
}

// SQLDialect is what differs between the SQL engines SQLStore runs on.
type SQLDialect struct {
	// Rebind turns the store's "?" placeholders into the engine's; nil
	// keeps them.
	Rebind func(query string) string
	// Greatest is the engine's two-argument maximum: "max" (SQLite),
	// "greatest" (PostgreSQL).
	Greatest string
	// JSONArg is a JSON-valued parameter: "?" or "?::jsonb".
	JSONArg string
	// JSONText reads a JSON column as text: "%s" or "%s::text" (a
	// fmt pattern applied to the column name).
	JSONText string
	// SetFeedback sets metadata.feedback of one message, leaving the rest
	// of the metadata: parameters the feedback as JSON, the message id.
	SetFeedback string
}

// NewSQLStore returns the store over a migrated database: write runs the
// writes, read the reads (the same *sql.DB, or query-only connections to
// it). The caller closes them.
func NewSQLStore(write, read *sql.DB, d SQLDialect) *SQLStore {
	if read == nil {
		read = write
	}
	return &SQLStore{write: write, read: read, d: d}
}

// q is query in the engine's placeholders.
func (s *SQLStore) q(query string) string {
	if s.d.Rebind == nil {
		return query
	}
	return s.d.Rebind(query)
}

// stmtKey names a prepared statement: its database and query text.
type stmtKey struct {
	db    *sql.DB
	query string
}

// prepared returns query prepared on db, preparing it the first time: a
// turn runs the same few statements, and parsing one costs more than
// running it. It returns nil when preparing fails; the caller then runs
// the query as it is, which reports the error.
func (s *SQLStore) prepared(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	k := stmtKey{db, query}
	if st, ok := s.stmts.Load(k); ok {
		return st.(*sql.Stmt)
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := s.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	return st
}

// preparedDB runs the store's queries on db as prepared statements.
type preparedDB struct {
	s  *SQLStore
	db *sql.DB
}

func (p preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.s.prepared(ctx, p.db, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

func (p preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.s.prepared(ctx, p.db, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

func (p preparedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.s.prepared(ctx, p.db, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

// reader and writer run queries on the read and write connections as
// prepared statements.
func (s *SQLStore) reader() preparedDB { return preparedDB{s, s.read} }
func (s *SQLStore) writer() preparedDB { return preparedDB{s, s.write} }

// jsonText is column read as JSON text.
func (s *SQLStore) jsonText(col string) string { return fmt.Sprintf(s.d.JSONText, col) }

// Ping reports whether the database answers a query, on a read
// connection, so that a long write transaction does not make it wait.
func (s *SQLStore) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// What the store's methods share: ids, defaults, metadata encoding and the
// assembly of turns from message rows.

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

// queryRows runs query and scans each row with scan; an empty result is
// an empty, non-nil slice.
func queryRows[T any](ctx context.Context, db sqlrows.Querier, query string, args []any, scan func(sqlrows.Scanner) (T, error)) ([]T, error) {
	out, err := sqlrows.Collect(ctx, db, query, args, scan)
	if out == nil && err == nil {
		out = []T{}
	}
	return out, err
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
