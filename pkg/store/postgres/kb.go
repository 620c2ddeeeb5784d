package postgres

// Knowledge bases in PostgreSQL (kb.store "postgres"), for several replicas
// serving the same knowledge bases: the list of knowledge bases in the
// table mixchat_kb_registry in the DSN's schema (name → schema), and each
// knowledge base's tables (those of the SQLite file, with PostgreSQL's
// types, plus its originals) in a schema of its own, mixchat_kb_HASH
// (SCHEMA_kb_HASH when the DSN's search_path selects a schema other than
// public). pkg/kb describes what it keeps there and how replicas follow
// each other's changes.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mixchat/mixchat/pkg/store/internal/kbtables"
	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

// kbSchema is the layout of a knowledge base's PostgreSQL schema: the
// SQLite file's tables (pkg/store/sqlite) with PostgreSQL's types (64-bit
// times, bytea vectors), plus the originals, kept in the database so every
// replica can serve downloads and rebuilds.
var kbSchema = kbtables.Tables("BIGINT", "BYTEA") + `CREATE TABLE IF NOT EXISTS originals (
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

const kbRegistry = `CREATE TABLE IF NOT EXISTS mixchat_kb_registry (
	name       TEXT PRIMARY KEY,
	schema     TEXT NOT NULL UNIQUE,
	created_at BIGINT NOT NULL
)`

// MaxOriginal is the largest original a knowledge base here keeps: a bytea
// value holds at most 1 GB (kb.max_upload_bytes must stay below it).
const MaxOriginal = 1<<30 - 1<<20

// KBCatalog is the registry of knowledge bases in PostgreSQL: a
// kb.SharedCatalog. The databases it opens take pkg/kb's SQL as written:
// their connections number the "?" placeholders and start every
// transaction by taking the knowledge base's advisory lock, so writers on
// different replicas take turns as SQLite's BEGIN IMMEDIATE makes them on
// one machine (and the generation counter, read and bumped inside each
// write, never loses an increment).
type KBCatalog struct {
	dsn    string
	prefix string // of the knowledge bases' schemas
	reg    *sql.DB
}

// OpenKBCatalog connects to the PostgreSQL database at dsn and creates the
// registry table if it is missing.
func OpenKBCatalog(ctx context.Context, dsn string) (*KBCatalog, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("kb.dsn: %w", err)
	}
	reg := sql.OpenDB(newConnector(stdlib.GetConnector(*cfg, pingBeforeReuse)))
	reg.SetMaxOpenConns(4)
	if _, err := reg.ExecContext(ctx, kbRegistry); err != nil {
		// Replicas starting at once may race on the catalog; the table is
		// there when another won.
		if _, err2 := reg.ExecContext(ctx, `SELECT 1 FROM mixchat_kb_registry LIMIT 1`); err2 != nil {
			reg.Close()
			return nil, fmt.Errorf("kb store: create registry: %w", err)
		}
	}
	// The knowledge bases' schemas are named after the registry's, so two
	// deployments (or tests) on one database, each with its search_path,
	// keep apart.
	var cur string
	if err := reg.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
		reg.Close()
		return nil, fmt.Errorf("kb store: %w", err)
	}
	prefix := "mixchat_kb_"
	if cur != "public" {
		prefix = cur + "_kb_"
	}
	return &KBCatalog{dsn: dsn, prefix: prefix, reg: reg}, nil
}

// Close closes the registry's connections.
func (c *KBCatalog) Close() error { return c.reg.Close() }

// MaxOriginal implements kb.SharedCatalog.
func (c *KBCatalog) MaxOriginal() int64 { return MaxOriginal }

// undefinedTable is PostgreSQL's error code for a missing table.
const undefinedTable = "42P01"

// Gone implements kb.SharedCatalog: a query on a knowledge base whose
// schema another replica dropped fails with undefined_table.
func (c *KBCatalog) Gone(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == undefinedTable
}

// schemaName is the PostgreSQL schema of the knowledge base name under a
// registry whose schemas start with prefix: the prefix and a hash, since
// knowledge-base names may hold characters identifiers may not.
func schemaName(prefix, name string) string {
	h := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(h[:10])
}

func (c *KBCatalog) schema(name string) string { return schemaName(c.prefix, name) }

// Exists implements kb.Catalog. A failed lookup (the database down or
// unreachable) is an error, never "not registered": an outage must not
// read as a missing knowledge base.
func (c *KBCatalog) Exists(ctx context.Context, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var one int
	switch err := c.reg.QueryRowContext(ctx, `SELECT 1 FROM mixchat_kb_registry WHERE name = $1`, name).Scan(&one); {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	default:
		return false, fmt.Errorf("knowledge base %s: look up in the PostgreSQL registry: %w", name, err)
	}
}

// Names implements kb.Catalog.
func (c *KBCatalog) Names(ctx context.Context) ([]string, error) {
	names, err := sqlrows.Collect(ctx, c.reg, `SELECT name FROM mixchat_kb_registry ORDER BY name`, nil, sqlrows.String)
	if err != nil {
		return nil, fmt.Errorf("list knowledge bases: %w", err)
	}
	if names == nil {
		names = []string{}
	}
	return names, nil
}

// Open implements kb.Catalog: it opens a registered knowledge base's
// schema.
func (c *KBCatalog) Open(ctx context.Context, name string) (*sql.DB, error) {
	return openKBSchema(ctx, c.dsn, c.schema(name))
}

// Create implements kb.Catalog: it registers name (an error wrapping
// fs.ErrExist when it is taken) and opens its new schema.
func (c *KBCatalog) Create(ctx context.Context, name string) (*sql.DB, error) {
	res, err := c.reg.ExecContext(ctx, `INSERT INTO mixchat_kb_registry (name, schema, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, c.schema(name), time.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("knowledge base %s: %w", name, fs.ErrExist)
	}
	// A schema left by a knowledge base of that name deleted half-way goes.
	if err := dropKBSchema(ctx, c.dsn, c.schema(name)); err == nil {
		var db *sql.DB
		if db, err = c.Open(ctx, name); err == nil {
			return db, nil
		}
	}
	_, _ = c.reg.ExecContext(context.WithoutCancel(ctx), `DELETE FROM mixchat_kb_registry WHERE name = $1`, name)
	return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
}

// Drop implements kb.Catalog: it unregisters name and removes its schema.
func (c *KBCatalog) Drop(ctx context.Context, name string) error {
	if _, err := c.reg.ExecContext(ctx, `DELETE FROM mixchat_kb_registry WHERE name = $1`, name); err != nil {
		return fmt.Errorf("unregister knowledge base %s: %w", name, err)
	}
	return dropKBSchema(ctx, c.dsn, c.schema(name))
}

// openKBSchema opens a knowledge base's schema (created with its tables if
// missing) in the PostgreSQL database dsn.
func openKBSchema(ctx context.Context, dsn, schema string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("kb store dsn: %w", err)
	}
	admin, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect to the kb store: %w", unavailable(ctx, err))
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
	db := sql.OpenDB(&kbConnector{base: newConnector(stdlib.GetConnector(*cfg, pingBeforeReuse)), key: kbLockKey(schema)})
	db.SetMaxOpenConns(4)
	// The tables are created in a transaction, under the lock, so replicas
	// opening a new knowledge base at once do not race on the catalog.
	tx, err := db.BeginTx(ctx, nil)
	if err == nil {
		if _, err = tx.ExecContext(ctx, kbSchema); err == nil {
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

// dropKBSchema removes a knowledge base's schema and everything in it.
func dropKBSchema(ctx context.Context, dsn, schema string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to the kb store: %w", unavailable(ctx, err))
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// kbLockKey is the advisory-lock key of a schema.
func kbLockKey(schema string) int64 {
	h := sha256.Sum256([]byte("mixchat-kb\x00" + schema))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// kbConnector makes kbConns.
type kbConnector struct {
	base *connector
	key  int64
}

func (c *kbConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &kbConn{conn: cn.(*conn), key: c.key}, nil
}

func (c *kbConnector) Driver() driver.Driver { return c.base.Driver() }

// kbConn is a pgx connection (a conn: failures to reach the server marked)
// that numbers "?" placeholders and locks the knowledge base at the start
// of every transaction.
type kbConn struct {
	*conn
	key int64
}

func (c *kbConn) Prepare(query string) (driver.Stmt, error) {
	return c.conn.Prepare(Rebind(query))
}

func (c *kbConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn.PrepareContext(ctx, Rebind(query))
}

func (c *kbConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.conn.ExecContext(ctx, Rebind(query), args)
}

func (c *kbConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.conn.QueryContext(ctx, Rebind(query), args)
}

func (c *kbConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *kbConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.conn.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, []driver.NamedValue{{Ordinal: 1, Value: c.key}}); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("lock knowledge base: %w", err)
	}
	return tx, nil
}
