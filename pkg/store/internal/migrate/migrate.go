// Package migrate runs the numbered SQL migrations of pkg/store's engines:
// files NNNN_name.sql, applied in order, each recorded in a table of
// applied versions, inside the caller's transaction. Existing migrations
// are never edited: a schema change is a new file. (A migration library
// would bring its own driver registrations and locking for two statements'
// worth of logic, hence this small runner.)
package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one schema change.
type Migration struct {
	Version int64
	Name    string // the file name without .sql
	SQL     string
}

// Load returns the migrations in dir of fsys ordered by version.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(name, ".sql"), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Schema is how an engine keeps the record of applied migrations.
type Schema struct {
	// Lock, when not empty, is run first in the migration transaction so
	// that processes opening one database at once migrate it one after
	// the other (SQLite's BEGIN IMMEDIATE needs none).
	Lock string
	// Create makes the schema_migrations table (version, name, applied_at)
	// if it is missing.
	Create string
	// Insert records one migration: version, name, applied_at (Unix
	// milliseconds), in the engine's placeholders.
	Insert string
}

// Run applies the migrations in dir of fsys to db in one transaction.
func Run(ctx context.Context, db *sql.DB, s Schema, fsys fs.FS, dir string) error {
	ms, err := Load(fsys, dir)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if err := Apply(ctx, tx, s, ms); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Apply runs, in tx, the migrations of ms that schema_migrations does not
// record, in order, and records them, after s.Lock. The caller commits tx.
func Apply(ctx context.Context, tx *sql.Tx, s Schema, ms []Migration) error {
	if s.Lock != "" {
		if _, err := tx.ExecContext(ctx, s.Lock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.Create); err != nil {
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
		if applied[m.Version] {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, s.Insert, m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
	}
	return nil
}
