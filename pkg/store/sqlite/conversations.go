package sqlite

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store/internal/migrate"
)

// migrations are the schema of the conversations file (pkg/memory's
// tables), migrations/NNNN_name.sql, recorded in schema_migrations.
//
//go:embed migrations/*.sql
var migrations embed.FS

// dialect is how SQLite's SQL differs from what memory.SQLStore writes.
var dialect = memory.SQLDialect{
	Greatest:    "max",
	JSONArg:     "?",
	JSONText:    "%s",
	SetFeedback: `UPDATE messages SET metadata = json_set(metadata, '$.feedback', json(?)) WHERE id = ?`,
}

// Conversations is a memory.Store and memory.StateStore in one SQLite
// database file, for a single machine.
//
// The database runs in WAL mode, so reads never wait for the writer. Writes
// go through a single connection: the process's writers queue for it in Go
// instead of contending for SQLite's write lock. Write transactions begin
// IMMEDIATE and connections wait up to busyTimeout for the lock, so several
// processes (or several Conversations values) on one file serialise their
// writes too. Commits use synchronous=NORMAL: durable across a crash of the
// process, while a power loss may undo the last commits.
type Conversations struct {
	*memory.SQLStore
	close func() error
}

// OpenConversations opens (creating if needed) the SQLite database at path
// and migrates its schema. The directory of path is created if missing. The
// path ":memory:" gives a private in-memory database on a single
// connection.
func OpenConversations(ctx context.Context, path string) (*Conversations, error) {
	c, err := openConversations(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return c, nil
}

func openConversations(ctx context.Context, path string) (*Conversations, error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	if strings.ContainsRune(path, '?') {
		return nil, errors.New("path contains '?'")
	}
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
	}
	// The writer opens first: its connection switches the file to WAL mode
	// before any reader connects.
	w, err := openConversationDB(ctx, path, false)
	if err != nil {
		return nil, err
	}
	r := w
	if path != ":memory:" {
		if r, err = openConversationDB(ctx, path, true); err != nil {
			w.Close()
			return nil, err
		}
	}
	closeAll := func() error {
		err := w.Close()
		if r != w {
			err = errors.Join(err, r.Close())
		}
		return err
	}
	if err := migrate.Run(ctx, w, migrationSchema, migrations, "migrations"); err != nil {
		closeAll()
		return nil, err
	}
	return &Conversations{SQLStore: memory.NewSQLStore(w, r, dialect), close: closeAll}, nil
}

// migrationSchema records the conversations' migrations; they run in one
// BEGIN IMMEDIATE transaction: one migrating process at a time.
var migrationSchema = migrate.Schema{
	Create: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`,
	Insert: `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
}

// Close closes the database.
func (c *Conversations) Close() error { return c.close() }
