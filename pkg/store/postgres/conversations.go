package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/internal/migrate"
)

// migrations are the schema of the conversations (pkg/memory's tables),
// migrations/NNNN_name.sql, recorded in schema_migrations.
//
//go:embed migrations/*.sql
var migrations embed.FS

// dialect is how PostgreSQL's SQL differs from what memory.SQLStore writes.
var dialect = memory.SQLDialect{
	Rebind:      Rebind,
	Greatest:    "greatest",
	JSONArg:     "?::jsonb",
	JSONText:    "%s::text",
	SetFeedback: `UPDATE messages SET metadata = metadata || jsonb_build_object('feedback', ?::jsonb) WHERE id = ?`,
}

// Conversations is a memory.Store and memory.StateStore in a PostgreSQL
// database, for several mixchat processes sharing their conversations, and
// a memory.UserLocker across them.
//
// Turn ids are allocated by incrementing the conversation's counter row in
// the transaction that writes the turn; the row lock serialises concurrent
// appends to one conversation across processes.
type Conversations struct {
	*memory.SQLStore
	db  *sql.DB
	cfg *pgx.ConnConfig
}

var _ memory.UserLocker = (*Conversations)(nil)

// migrationLockKey is the advisory lock key under which the schema is
// migrated, so that processes opening one database at once migrate it one
// after the other.
const migrationLockKey int64 = 0x6d6978636861746d // "mixchatm"

// OpenConversations connects to the PostgreSQL database at dsn (a URL or
// key=value string as pgx accepts) and migrates its schema.
func OpenConversations(ctx context.Context, dsn string) (*Conversations, error) {
	db, cfg, err := open(ctx, dsn, 0)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := migrate.Run(ctx, db, migrationSchema, migrations, "migrations"); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return &Conversations{SQLStore: memory.NewSQLStore(db, db, dialect), db: db, cfg: cfg}, nil
}

var migrationSchema = migrate.Schema{
	Lock: `SELECT pg_advisory_xact_lock(` + strconv.FormatInt(migrationLockKey, 10) + `)`,
	Create: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    BIGINT NOT NULL PRIMARY KEY,
		name       TEXT   NOT NULL,
		applied_at BIGINT NOT NULL
	)`,
	Insert: `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
}

// LockUser implements memory.UserLocker with a session advisory lock on a
// connection of its own, outside the pool: a consolidation holds it while
// the model summarises, and must not take a pooled connection from the
// requests meanwhile. Closing the connection releases the lock, also when
// the process dies.
func (c *Conversations) LockUser(ctx context.Context, userID string) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, c.cfg.Copy())
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, userLockKey(userID)); err != nil {
		conn.Close(context.Background())
		return nil, unavailable(ctx, err)
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
func (c *Conversations) Close() error { return c.db.Close() }
