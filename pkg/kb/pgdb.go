package kb

// A knowledge base's database in PostgreSQL, for replicas that share their
// knowledge bases: the same tables as the SQLite file (schema above, in
// db.go), one PostgreSQL schema per knowledge base, reached through a
// database/sql connection that accepts the package's SQL as written. The
// package's queries use SQLite's "?" placeholders and portable SQL (ON
// CONFLICT ... DO UPDATE, LIKE ... ESCAPE, count(*)); the connection here
// numbers the placeholders ($1, $2, ...) and starts every transaction by
// taking the knowledge base's advisory lock, so writers on different
// replicas take turns as SQLite's BEGIN IMMEDIATE makes them on one machine
// (and the generation counter, read and bumped inside each write, never
// loses an increment).
//
// Rewriting placeholders is written here rather than taken from a library:
// the rule is tiny (a "?" outside quotes) and the package's SQL is ours.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgSchema is the layout of a knowledge base's PostgreSQL schema: db.go's
// tables with PostgreSQL's types (64-bit times, bytea vectors), plus the
// originals, kept in the database so every replica can serve downloads and
// rebuilds.
const pgSchema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
	name             TEXT PRIMARY KEY,
	hash             TEXT NOT NULL,
	size             BIGINT NOT NULL,
	mtime            BIGINT NOT NULL,
	chunks           INTEGER NOT NULL,
	custom_docs      INTEGER NOT NULL DEFAULT 0,
	chunk_size       INTEGER NOT NULL DEFAULT 0,
	chunk_overlap    INTEGER NOT NULL DEFAULT 0,
	zh_title_enhance INTEGER NOT NULL DEFAULT 0,
	created_at       BIGINT NOT NULL,
	updated_at       BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
	id       TEXT PRIMARY KEY,
	file     TEXT NOT NULL REFERENCES files(name) ON DELETE CASCADE,
	seq      INTEGER NOT NULL,
	text     TEXT NOT NULL,
	metadata TEXT NOT NULL,
	terms    TEXT NOT NULL,
	vector   BYTEA
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file, seq);
CREATE TABLE IF NOT EXISTS originals (
	name  TEXT PRIMARY KEY,
	data  BYTEA NOT NULL,
	hash  TEXT NOT NULL DEFAULT '',
	size  BIGINT NOT NULL DEFAULT 0,
	mtime BIGINT NOT NULL DEFAULT 0
);
DO $$
BEGIN
	-- Schemas made before the originals were stored here have the table
	-- without its description columns (and no rows).
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = 'originals' AND column_name = 'hash') THEN
		ALTER TABLE originals ADD COLUMN hash TEXT NOT NULL DEFAULT '',
			ADD COLUMN size BIGINT NOT NULL DEFAULT 0, ADD COLUMN mtime BIGINT NOT NULL DEFAULT 0;
	END IF;
END
$$;
`

// pgSchemaName is the PostgreSQL schema of the knowledge base name: a
// fixed prefix and a hash, since knowledge-base names may hold characters
// identifiers may not.
func pgSchemaName(prefix, name string) string {
	h := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(h[:10])
}

// pgLockKey is the advisory-lock key of a schema.
func pgLockKey(schema string) int64 {
	h := sha256.Sum256([]byte("mixchat-kb\x00" + schema))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// openPGDB opens the knowledge base's schema (created with its tables if
// missing) in the PostgreSQL database dsn.
func openPGDB(ctx context.Context, dsn, schema string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("kb store dsn: %w", err)
	}
	admin, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect to the kb store: %w", err)
	}
	ident := pgx.Identifier{schema}.Sanitize()
	_, err = admin.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident)
	admin.Close(ctx)
	if err != nil {
		// Two replicas creating the same schema at once: one wins.
		var exists bool
		if c, cerr := pgx.ConnectConfig(ctx, cfg.Copy()); cerr == nil {
			_ = c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists)
			c.Close(ctx)
		}
		if !exists {
			return nil, fmt.Errorf("create schema %s: %w", schema, err)
		}
	}
	cfg.RuntimeParams["search_path"] = schema
	db := sql.OpenDB(&pgConnector{base: stdlib.GetConnector(*cfg), key: pgLockKey(schema)})
	db.SetMaxOpenConns(4)
	// The tables are created in a transaction, under the lock, so replicas
	// opening a new knowledge base at once do not race on the catalog.
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		if _, err = tx.ExecContext(ctx, pgSchema); err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create tables in %s: %w", schema, err)
	}
	return db, nil
}

// dropPGSchema removes a knowledge base's schema and everything in it.
func dropPGSchema(ctx context.Context, dsn, schema string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to the kb store: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// pgConnector makes pgConns.
type pgConnector struct {
	base driver.Connector
	key  int64
}

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		conn.Close()
		return nil, errors.New("kb store: unexpected driver connection")
	}
	return &pgConn{Conn: sc, key: c.key}, nil
}

func (c *pgConnector) Driver() driver.Driver { return c.base.Driver() }

// pgConn is a pgx connection that numbers "?" placeholders and locks the
// knowledge base at the start of every transaction.
type pgConn struct {
	*stdlib.Conn
	key int64
}

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(rebind(query))
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.Conn.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, []driver.NamedValue{{Ordinal: 1, Value: c.key}}); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("lock knowledge base: %w", err)
	}
	return tx, nil
}

// rebind numbers the "?" placeholders of query outside quoted text: "?" →
// "$1", "$2", ...
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte // the open quote, or 0
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0 // a doubled quote closes and reopens: same result
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// pgMaxOriginal is the largest original the PostgreSQL store keeps: a
// bytea value holds at most 1 GB (kb.max_upload_bytes must stay below it).
const pgMaxOriginal = 1<<30 - 1<<20

// putOriginal stores a document's original (replacing the one it had),
// inside the caller's transaction when q is one.
func putOriginal(ctx context.Context, q querier, name string, data []byte) error {
	if data == nil {
		data = []byte{} // NOT NULL: an empty file is an empty value
	}
	_, err := q.ExecContext(ctx, `INSERT INTO originals(name, data, hash, size, mtime) VALUES(?, ?, ?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET data = excluded.data, hash = excluded.hash, size = excluded.size, mtime = excluded.mtime`,
		name, data, contentHash(data, nil), int64(len(data)), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store original of %s: %w", name, err)
	}
	return nil
}

// getOriginal reads a document's original; ok is false when there is none.
func getOriginal(ctx context.Context, q querier, name string) (data []byte, mtime time.Time, ok bool, err error) {
	var ms int64
	err = q.QueryRowContext(ctx, `SELECT data, mtime FROM originals WHERE name = ?`, name).Scan(&data, &ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, time.Time{}, false, nil
	case err != nil:
		return nil, time.Time{}, false, fmt.Errorf("read original of %s: %w", name, err)
	}
	return data, time.UnixMilli(ms), true, nil
}

// originalHash is the content hash of a document's original; ok is false
// when there is none.
func originalHash(ctx context.Context, q querier, name string) (hash string, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT hash FROM originals WHERE name = ?`, name).Scan(&hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read original of %s: %w", name, err)
	}
	return hash, true, nil
}

// deleteOriginal removes a document's original and reports whether there
// was one.
func deleteOriginal(ctx context.Context, q querier, name string) (bool, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM originals WHERE name = ?`, name)
	if err != nil {
		return false, fmt.Errorf("delete original of %s: %w", name, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// originalNames lists the stored originals, sorted.
func originalNames(ctx context.Context, q querier) ([]string, error) {
	names, err := queryStrings(ctx, q, `SELECT name FROM originals ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list originals: %w", err)
	}
	return names, nil
}
