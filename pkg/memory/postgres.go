package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Postgres is a Store in a PostgreSQL database, for several mixchat
// processes sharing their conversations.
//
// Turn ids are allocated by incrementing the conversation's counter row in
// the transaction that writes the turn; the row lock serialises concurrent
// appends to one conversation across processes, and a rolled-back append
// leaves no gap. To keep the tables in a schema other than public, add
// search_path to the DSN (postgres://host/db?search_path=mixchat).
type Postgres struct {
	pool *pgxpool.Pool
}

var _ Store = (*Postgres)(nil)

// migrationLockKey is the advisory lock key under which the schema is
// migrated, so that processes opening one database at once migrate it one
// after the other.
const migrationLockKey int64 = 0x6d6978636861746d // "mixchatm"

// OpenPostgres connects to the PostgreSQL database at dsn (a URL or
// key=value string as pgx accepts) and migrates its schema.
func OpenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	p := &Postgres{pool: pool}
	if err := p.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return p, nil
}

func (p *Postgres) migrate(ctx context.Context) error {
	ms, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// Held until the transaction ends.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    BIGINT NOT NULL PRIMARY KEY,
			name       TEXT   NOT NULL,
			applied_at BIGINT NOT NULL
		)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		applied := map[int64]bool{}
		for _, v := range versions {
			applied[v] = true
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			// No arguments: the simple protocol runs every statement of the file.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, nowMillis()); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

var _ UserLocker = (*Postgres)(nil)

// LockUser implements UserLocker with a session advisory lock on a
// connection of its own, outside the pool: a consolidation holds it while
// the model summarises, and must not take a pooled connection from the
// requests meanwhile. Closing the connection releases the lock, also when
// the process dies.
func (p *Postgres) LockUser(ctx context.Context, userID string) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, userLockKey(userID)); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn.Close(ctx)
	}, nil
}

// userLockKey is the advisory lock key of a user's memory.
func userLockKey(userID string) int64 {
	h := fnv.New64a()
	h.Write([]byte("mixchat-user-memory\x00"))
	h.Write([]byte(userID))
	return int64(h.Sum64())
}

// Close closes the connection pool.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}

// CreateConversation implements Store.
func (p *Postgres) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	c = prepareConversation(c)
	tag, err := p.pool.Exec(ctx, `INSERT INTO conversations (id, name, chat_type, user_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		c.ID, c.Name, c.ChatType, c.UserID, c.CreatedAt, c.UpdatedAt)
	if err != nil {
		return Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Conversation{}, fmt.Errorf("create conversation %s: %w", c.ID, ErrConflict)
	}
	return c, nil
}

const pgConversationColumns = `id, name, chat_type, user_id, created_at, updated_at`

// Conversation implements Store.
func (p *Postgres) Conversation(ctx context.Context, id string) (Conversation, error) {
	var c Conversation
	err := p.pool.QueryRow(ctx, `SELECT `+pgConversationColumns+` FROM conversations WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.ChatType, &c.UserID, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Conversation{}, fmt.Errorf("conversation %s: %w", id, err)
	}
	return c, nil
}

// Conversations implements Store.
func (p *Postgres) Conversations(ctx context.Context, userID string) ([]Conversation, error) {
	query := `SELECT ` + pgConversationColumns + ` FROM conversations`
	var args []any
	if userID != "" {
		query += ` WHERE user_id = $1`
		args = append(args, userID)
	}
	query += ` ORDER BY updated_at DESC, created_at DESC, id DESC`
	rows, err := p.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	cs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Conversation, error) {
		var c Conversation
		err := row.Scan(&c.ID, &c.Name, &c.ChatType, &c.UserID, &c.CreatedAt, &c.UpdatedAt)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	if cs == nil {
		cs = []Conversation{}
	}
	return cs, nil
}

// RenameConversation implements Store.
func (p *Postgres) RenameConversation(ctx context.Context, id, name string) error {
	tag, err := p.pool.Exec(ctx, `UPDATE conversations SET name = $1 WHERE id = $2`, name, id)
	if err != nil {
		return fmt.Errorf("rename conversation %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("rename conversation %s: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteConversation implements Store; the messages go by ON DELETE CASCADE.
func (p *Postgres) DeleteConversation(ctx context.Context, id string) error {
	tag, err := p.pool.Exec(ctx, `DELETE FROM conversations WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete conversation %s: %w", id, ErrNotFound)
	}
	return nil
}

// AppendTurn implements Store. The upsert of the conversation's counter row
// takes its row lock until commit, so concurrent appends to one conversation
// get consecutive turn ids in commit order.
func (p *Postgres) AppendTurn(ctx context.Context, conversationID string, question, answer Message) (Turn, error) {
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
	turnID, err := p.appendTurn(ctx, q, a, qmeta, ameta)
	if err != nil {
		return Turn{}, fmt.Errorf("append turn: %w", err)
	}
	q.TurnID, a.TurnID = turnID, turnID
	return Turn{ID: turnID, Question: q, Answer: a}, nil
}

// commitTimeout bounds a COMMIT or ROLLBACK that runs after the caller's
// context has ended.
const commitTimeout = 10 * time.Second

func (p *Postgres) appendTurn(ctx context.Context, q, a Message, qmeta, ameta []byte) (turnID int64, err error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			// Rolled back even when ctx has ended, so that the connection
			// goes back to the pool clean rather than being closed.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
			defer cancel()
			tx.Rollback(rctx)
		}
	}()
	err = tx.QueryRow(ctx, `INSERT INTO conversations AS c (id, created_at, updated_at, last_turn_id) VALUES ($1, $2, $3, 1)
		ON CONFLICT (id) DO UPDATE SET last_turn_id = c.last_turn_id + 1, updated_at = GREATEST(c.updated_at, EXCLUDED.updated_at)
		RETURNING last_turn_id`, q.ConversationID, q.Timestamp, a.Timestamp).Scan(&turnID)
	if err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `INSERT INTO messages (id, conversation_id, turn_id, seq, role, content, timestamp, metadata)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8), ($9, $2, $3, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING`,
		q.ID, q.ConversationID, turnID, seqQuestion, q.Role, q.Content, q.Timestamp, json.RawMessage(qmeta),
		a.ID, seqAnswer, a.Role, a.Content, a.Timestamp, json.RawMessage(ameta))
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() != 2 {
		return 0, fmt.Errorf("message id %s or %s: %w", q.ID, a.ID, ErrConflict)
	}
	// Once both messages are written the turn is committed even if ctx ends
	// now: a COMMIT interrupted by the context could still take effect on
	// the server after being reported as failed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return 0, err
	}
	return turnID, nil
}

const pgMessageColumns = `id, conversation_id, turn_id, seq, role, content, timestamp, metadata`

func scanPgMessage(row pgx.Row) (messageRow, error) {
	var (
		r    messageRow
		seq  int16
		meta []byte
	)
	if err := row.Scan(&r.ID, &r.ConversationID, &r.TurnID, &seq, &r.Role, &r.Content, &r.Timestamp, &meta); err != nil {
		return r, err
	}
	r.seq = int(seq)
	m, err := decodeMetadata(meta)
	if err != nil {
		return r, fmt.Errorf("message %s: %w", r.ID, err)
	}
	r.Metadata = m
	return r, nil
}

// Turns implements Store.
func (p *Postgres) Turns(ctx context.Context, conversationID string, limit int) ([]Turn, error) {
	query := `SELECT ` + pgMessageColumns + ` FROM messages WHERE conversation_id = $1`
	args := []any{conversationID}
	if limit > 0 {
		// From the limit-th last question on.
		query += ` AND turn_id >= COALESCE((SELECT turn_id FROM messages WHERE conversation_id = $1 AND seq = 0
			ORDER BY turn_id DESC OFFSET $2 LIMIT 1), 0)`
		args = append(args, limit-1)
	}
	query += ` ORDER BY turn_id, seq`
	rows, err := p.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (messageRow, error) { return scanPgMessage(row) })
	if err != nil {
		return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
	}
	if len(ms) == 0 {
		var exists bool
		err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM conversations WHERE id = $1)`, conversationID).Scan(&exists)
		if err != nil {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, err)
		}
		if !exists {
			return nil, fmt.Errorf("turns of %s: %w", conversationID, ErrNotFound)
		}
	}
	return assembleTurns(ms), nil
}

// Message implements Store.
func (p *Postgres) Message(ctx context.Context, messageID string) (Message, error) {
	r, err := scanPgMessage(p.pool.QueryRow(ctx, `SELECT `+pgMessageColumns+` FROM messages WHERE id = $1`, messageID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, fmt.Errorf("message %s: %w", messageID, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("message %s: %w", messageID, err)
	}
	return r.Message, nil
}

// SetFeedback implements Store. It replaces metadata.feedback in place,
// leaving the rest of the metadata as it is.
func (p *Postgres) SetFeedback(ctx context.Context, messageID string, f Feedback) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	tag, err := p.pool.Exec(ctx, `UPDATE messages SET metadata = metadata || jsonb_build_object('feedback', $1::jsonb) WHERE id = $2`,
		json.RawMessage(b), messageID)
	if err != nil {
		return fmt.Errorf("set feedback on %s: %w", messageID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set feedback on %s: %w", messageID, ErrNotFound)
	}
	return nil
}
