package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// kbSchema is the layout of a knowledge base's SQLite file. files holds one
// row per document, chunks its pieces with their term frequencies (for
// BM25) and vectors (so the vector index can be rebuilt or re-pushed to
// Qdrant without re-embedding). meta holds the KB's settings and the
// generation counter, bumped by every change, that tells whether the
// on-disk HNSW snapshot is current.
const kbSchema = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
	name             TEXT PRIMARY KEY,
	hash             TEXT NOT NULL,
	size             INTEGER NOT NULL,
	mtime            INTEGER NOT NULL,
	chunks           INTEGER NOT NULL,
	custom_docs      INTEGER NOT NULL DEFAULT 0,
	chunk_size       INTEGER NOT NULL DEFAULT 0,
	chunk_overlap    INTEGER NOT NULL DEFAULT 0,
	zh_title_enhance INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER NOT NULL,
	updated_at       INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
	id       TEXT PRIMARY KEY,
	file     TEXT NOT NULL REFERENCES files(name) ON DELETE CASCADE,
	seq      INTEGER NOT NULL,
	text     TEXT NOT NULL,
	metadata TEXT NOT NULL,
	terms    TEXT NOT NULL,
	vector   BLOB
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file, seq);
`

// KBFile is the name of a knowledge base's SQLite file in its folder.
const KBFile = "kb.db"

// KBCatalog is the knowledge bases of one machine (kb.store "files"), a
// kb.Catalog: a folder per knowledge base under the root, each with its
// SQLite file, kb.db (pkg/kb keeps the originals and index snapshots beside
// it). A folder without kb.db is no knowledge base.
type KBCatalog struct {
	root string
}

// NewKBCatalog returns the catalog of the knowledge bases under root.
func NewKBCatalog(root string) *KBCatalog { return &KBCatalog{root: root} }

func (c *KBCatalog) path(name string) string { return filepath.Join(c.root, name, KBFile) }

// Exists implements kb.Catalog; it fails only when the folder cannot be
// examined.
func (c *KBCatalog) Exists(ctx context.Context, name string) (bool, error) {
	st, err := os.Stat(c.path(name))
	switch {
	case err == nil:
		return st.Mode().IsRegular(), nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("knowledge base %s: %w", name, err)
	}
}

// Names implements kb.Catalog: the folders under the root holding a kb.db,
// sorted. The caller checks that they are valid names.
func (c *KBCatalog) Names(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return nil, fmt.Errorf("list knowledge bases: %w", err)
	}
	names := []string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if ok, _ := c.Exists(ctx, e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Open implements kb.Catalog.
func (c *KBCatalog) Open(ctx context.Context, name string) (*sql.DB, error) {
	return openKB(ctx, c.path(name))
}

// Create implements kb.Catalog: it makes the knowledge base's folder and
// file; an error wrapping fs.ErrExist when the file exists.
func (c *KBCatalog) Create(ctx context.Context, name string) (*sql.DB, error) {
	p := c.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("create knowledge base %s: %w", name, err)
	}
	if _, err := os.Stat(p); err == nil {
		return nil, fmt.Errorf("knowledge base %s: %w", name, fs.ErrExist)
	}
	db, err := openKB(ctx, p)
	if err != nil {
		os.Remove(p)
		return nil, err
	}
	return db, nil
}

// Drop implements kb.Catalog: it removes the knowledge base's file (the
// caller has closed it, and removes the folder).
func (c *KBCatalog) Drop(ctx context.Context, name string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(c.path(name) + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("drop knowledge base %s: %w", name, err)
	}
	return nil
}

// Close implements kb.Catalog; there is nothing to close.
func (c *KBCatalog) Close() error { return nil }

// openKB opens (creating if needed) a knowledge base's SQLite file.
func openKB(ctx context.Context, path string) (*sql.DB, error) {
	db, err := openFile(ctx, path, 4)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, kbSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create schema in %s: %w", path, err)
	}
	return db, nil
}
