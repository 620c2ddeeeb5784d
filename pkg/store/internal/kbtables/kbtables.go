// Package kbtables is the layout of a knowledge base's tables, which the
// SQLite and PostgreSQL engines of pkg/store create with their own column
// types. files holds one row per document, chunks its pieces with their
// term frequencies (for BM25) and vectors (so the vector index can be
// rebuilt or re-pushed to Qdrant without re-embedding). meta holds the
// knowledge base's settings and the generation counter, bumped by every
// change, that tells whether an index snapshot is current.
package kbtables

import "strings"

// Tables returns the statements creating meta, files and chunks (and the
// chunks' index) where missing, with int64 as the type of the 64-bit
// columns (sizes and times) and bytes as the type of the vectors.
func Tables(int64, bytes string) string {
	return strings.NewReplacer("{int64}", int64, "{bytes}", bytes).Replace(tables)
}

const tables = `
CREATE TABLE IF NOT EXISTS meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
	name             TEXT PRIMARY KEY,
	hash             TEXT NOT NULL,
	size             {int64} NOT NULL,
	mtime            {int64} NOT NULL,
	chunks           INTEGER NOT NULL,
	custom_docs      INTEGER NOT NULL DEFAULT 0,
	chunk_size       INTEGER NOT NULL DEFAULT 0,
	chunk_overlap    INTEGER NOT NULL DEFAULT 0,
	zh_title_enhance INTEGER NOT NULL DEFAULT 0,
	created_at       {int64} NOT NULL,
	updated_at       {int64} NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
	id       TEXT PRIMARY KEY,
	file     TEXT NOT NULL REFERENCES files(name) ON DELETE CASCADE,
	seq      INTEGER NOT NULL,
	text     TEXT NOT NULL,
	metadata TEXT NOT NULL,
	terms    TEXT NOT NULL,
	vector   {bytes}
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file, seq);
`
