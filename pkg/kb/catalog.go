package kb

import (
	"context"
	"database/sql"
)

// Catalog is where the knowledge bases' databases live: a folder per
// knowledge base with a SQLite file (pkg/store/sqlite's KBCatalog, kb.store
// "files"), or PostgreSQL shared by replicas (pkg/store/postgres's
// KBCatalog, kb.store "postgres"). The databases it opens take the
// package's SQL as written: SQLite's "?" placeholders and portable
// statements (ON CONFLICT ... DO UPDATE, LIKE ... ESCAPE, count(*)), with
// write transactions serialised per knowledge base (SQLite's BEGIN
// IMMEDIATE, a PostgreSQL advisory lock). The tables are those of
// pkg/store/sqlite's kbSchema, plus an originals table (name, data, hash,
// size, mtime) in a SharedCatalog's.
//
// It has six methods because it is the life cycle of a set of databases
// (list, look up, create, open, drop, close): the Service needs every one,
// and a catalog offering some would be no catalog.
type Catalog interface {
	// Names lists the knowledge bases, sorted (names that are no valid
	// knowledge-base name are left out by the Service).
	Names(ctx context.Context) ([]string, error)
	// Exists reports whether the knowledge base exists. It fails only when
	// the check itself does (the database is unreachable), so that an
	// outage is never taken for a missing knowledge base.
	Exists(ctx context.Context, name string) (bool, error)
	// Create makes and opens the empty database of a new knowledge base;
	// an error wrapping fs.ErrExist when the name is taken.
	Create(ctx context.Context, name string) (*sql.DB, error)
	// Open opens the database of an existing knowledge base.
	Open(ctx context.Context, name string) (*sql.DB, error)
	// Drop removes a knowledge base's database, which the caller has
	// closed.
	Drop(ctx context.Context, name string) error
	// Close releases the catalog's own resources (not the databases it
	// opened).
	Close() error
}

// SharedCatalog is a Catalog whose knowledge bases several replicas serve
// at once (pkg/store/postgres). With one, the Service keeps the originals
// in the knowledge base's database (the originals table, written in the
// transaction of the file's chunks) rather than in this replica's folder,
// builds the in-memory indexes from the rows rather than from this
// replica's snapshots, and before each search brings them up to what the
// other replicas changed (see replicas.go). It is a Catalog and the two
// abilities sharing adds, checked at run time as http.Flusher is.
type SharedCatalog interface {
	Catalog
	// MaxOriginal is the largest original the databases keep, in bytes.
	MaxOriginal() int64
	// Gone reports whether err, from a query on an open knowledge base's
	// database, says that its tables are gone: another replica deleted it.
	Gone(err error) bool
}

// Knowledge-base stores (Config.Store): which Catalog the program opens.
const (
	KBStoreFiles    = "files"    // a folder per KB with a SQLite file (the default, also "")
	KBStorePostgres = "postgres" // PostgreSQL at Config.DSN, shared by replicas
)
