package kb

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

// The rows of a knowledge base's database (see Catalog for its tables):
// documents, chunks and settings, read and written with SQL that SQLite
// and PostgreSQL both run.

// FileInfo describes a document of a knowledge base.
type FileInfo struct {
	Name           string
	Hash           string // hex SHA-256 of the content
	Size           int64
	ModTime        time.Time
	Chunks         int
	CustomDocs     bool
	ChunkSize      int
	ChunkOverlap   int
	ZhTitleEnhance bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func getMeta(ctx context.Context, q querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func setMeta(ctx context.Context, q querier, key, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// commitGeneration increments the change counter inside tx, commits tx and
// returns the new value: every change is committed with its generation.
func commitGeneration(ctx context.Context, tx *sql.Tx) (uint64, error) {
	v, err := getMeta(ctx, tx, "generation")
	if err != nil {
		return 0, err
	}
	g, _ := strconv.ParseUint(v, 10, 64)
	g++
	if err := setMeta(ctx, tx, "generation", strconv.FormatUint(g, 10)); err != nil {
		return 0, err
	}
	return g, tx.Commit()
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

const fileColumns = `name, hash, size, mtime, chunks, custom_docs, chunk_size, chunk_overlap, zh_title_enhance, created_at, updated_at`

func scanFile(sc interface{ Scan(...any) error }) (FileInfo, error) {
	var f FileInfo
	var mtime, created, updated int64
	var custom, zh int
	err := sc.Scan(&f.Name, &f.Hash, &f.Size, &mtime, &f.Chunks, &custom, &f.ChunkSize, &f.ChunkOverlap, &zh, &created, &updated)
	f.ModTime = time.UnixMilli(mtime)
	f.CreatedAt = time.UnixMilli(created)
	f.UpdatedAt = time.UnixMilli(updated)
	f.CustomDocs = custom != 0
	f.ZhTitleEnhance = zh != 0
	return f, err
}

func listFiles(ctx context.Context, q querier) ([]FileInfo, error) {
	return sqlrows.Collect(ctx, q, `SELECT `+fileColumns+` FROM files ORDER BY name`, nil, scanFile)
}

func getFile(ctx context.Context, q querier, name string) (FileInfo, error) {
	f, err := scanFile(q.QueryRowContext(ctx, `SELECT `+fileColumns+` FROM files WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return FileInfo{}, fmt.Errorf("file %q: %w", name, ErrNotFound)
	}
	return f, err
}

// chunkIDs returns the ids of a file's chunks.
func chunkIDs(ctx context.Context, q querier, file string) ([]string, error) {
	return queryStrings(ctx, q, `SELECT id FROM chunks WHERE file = ?`, file)
}

// allChunkIDs returns the ids of every chunk.
func allChunkIDs(ctx context.Context, q querier) ([]string, error) {
	return queryStrings(ctx, q, `SELECT id FROM chunks`)
}

// queryStrings returns the first column of query's rows.
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	return sqlrows.Collect(ctx, q, query, args, sqlrows.String)
}

// storedChunk is a chunk row with its term frequencies.
type storedChunk struct {
	Chunk
	Terms map[string]int
}

// replaceFile writes a file's record and chunks in tx, removing the chunks
// it had. It returns the ids removed.
func replaceFile(ctx context.Context, tx *sql.Tx, f FileInfo, chunks []storedChunk) ([]string, error) {
	old, stmt, err := beginReplace(ctx, tx, f, len(chunks))
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	for _, c := range chunks {
		if err := insertChunk(ctx, stmt, f.Name, c); err != nil {
			return nil, err
		}
	}
	return old, nil
}

// beginReplace writes a file's record (with n chunks) in tx, removing the
// chunks it had, and returns their ids and the statement that inserts the
// new ones (insertChunk); the caller closes it.
func beginReplace(ctx context.Context, tx *sql.Tx, f FileInfo, n int) ([]string, *sql.Stmt, error) {
	old, err := chunkIDs(ctx, tx, f.Name)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE file = ?`, f.Name); err != nil {
		return nil, nil, err
	}
	now := time.Now().UnixMilli()
	if _, err := tx.ExecContext(ctx, `INSERT INTO files(`+fileColumns+`) VALUES(?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(name) DO UPDATE SET hash=excluded.hash, size=excluded.size, mtime=excluded.mtime,
		chunks=excluded.chunks, custom_docs=excluded.custom_docs, chunk_size=excluded.chunk_size,
		chunk_overlap=excluded.chunk_overlap, zh_title_enhance=excluded.zh_title_enhance, updated_at=excluded.updated_at`,
		f.Name, f.Hash, f.Size, f.ModTime.UnixMilli(), n, boolInt(f.CustomDocs), f.ChunkSize, f.ChunkOverlap,
		boolInt(f.ZhTitleEnhance), now, now); err != nil {
		return nil, nil, err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO chunks(id, file, seq, text, metadata, terms, vector) VALUES(?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET file=excluded.file, seq=excluded.seq, text=excluded.text,
		metadata=excluded.metadata, terms=excluded.terms, vector=excluded.vector`)
	if err != nil {
		return nil, nil, err
	}
	return old, stmt, nil
}

// insertChunk inserts one chunk of file with stmt (from beginReplace). A
// chunk without Terms stores none (they are computed from its text when
// needed), one without Vector no vector.
func insertChunk(ctx context.Context, stmt *sql.Stmt, file string, c storedChunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return fmt.Errorf("chunk %s metadata: %w", c.ID, err)
	}
	terms := ""
	if c.Terms != nil {
		b, err := json.Marshal(c.Terms)
		if err != nil {
			return err
		}
		terms = string(b)
	}
	if _, err := stmt.ExecContext(ctx, c.ID, file, c.Seq, c.Text, string(meta), terms, encodeVector(c.Vector)); err != nil {
		return fmt.Errorf("insert chunk %d of %s: %w", c.Seq, file, err)
	}
	return nil
}

// deleteFileRows removes a file and its chunks in tx and returns the chunk
// ids removed.
func deleteFileRows(ctx context.Context, tx *sql.Tx, name string) ([]string, error) {
	ids, err := chunkIDs(ctx, tx, name)
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE file = ?`, name); err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM files WHERE name = ?`, name)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("file %q: %w", name, ErrNotFound)
	}
	return ids, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// encodeVector stores v as little-endian float32s.
func encodeVector(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// scanChunks reads chunk rows (id, file, seq, text, metadata[, terms, vector]).
func scanChunk(rows sqlrows.Scanner, full bool) (storedChunk, error) {
	var c storedChunk
	var meta string
	var err error
	if full {
		var terms string
		var vec []byte
		err = rows.Scan(&c.ID, &c.File, &c.Seq, &c.Text, &meta, &terms, &vec)
		if err == nil && terms != "" {
			if err = json.Unmarshal([]byte(terms), &c.Terms); err != nil {
				return c, fmt.Errorf("chunk %s terms: %w", c.ID, err)
			}
		}
		if err == nil {
			c.Vector = decodeVector(vec)
		}
	} else {
		err = rows.Scan(&c.ID, &c.File, &c.Seq, &c.Text, &meta)
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(meta), &c.Metadata); err != nil {
		return c, fmt.Errorf("chunk %s metadata: %w", c.ID, err)
	}
	return c, nil
}

// eachChunk runs query, which selects chunk rows in full (id, file, seq,
// text, metadata, terms, vector), and calls fn with each chunk; an error
// from fn stops it.
func eachChunk(ctx context.Context, q querier, query string, args []any, fn func(storedChunk) error) error {
	return sqlrows.Each(ctx, q, query, args, func(row sqlrows.Scanner) error {
		c, err := scanChunk(row, true)
		if err != nil {
			return err
		}
		return fn(c)
	})
}

// chunksByID loads the chunks with the given ids (those that exist).
func chunksByID(ctx context.Context, q querier, ids []string) (map[string]Chunk, error) {
	out := make(map[string]Chunk, len(ids))
	for start := 0; start < len(ids); start += 500 {
		part := ids[start:min(start+500, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		err := sqlrows.Each(ctx, q, `SELECT id, file, seq, text, metadata FROM chunks WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args, func(row sqlrows.Scanner) error {
			c, err := scanChunk(row, false)
			if err == nil {
				out[c.ID] = c.Chunk
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// likePattern quotes LIKE's escape character; Chatchat's file_name filter
// takes SQL wildcards (% and _) as they are.
func likePattern(p string) string { return strings.ReplaceAll(p, `\`, `\\`) }

// filterChunks lists the chunks whose file matches the SQL LIKE pattern
// filePattern ("" = any) and whose first-level metadata equals meta
// (compared as JSON).
func filterChunks(ctx context.Context, q querier, filePattern string, meta map[string]any) ([]Chunk, error) {
	query := `SELECT id, file, seq, text, metadata FROM chunks`
	var args []any
	if filePattern != "" {
		query += ` WHERE file LIKE ? ESCAPE '\'`
		args = append(args, likePattern(filePattern))
	}
	query += ` ORDER BY file, seq`
	out := []Chunk{}
	match := compileFilter(Filter{Metadata: meta})
	err := sqlrows.Each(ctx, q, query, args, func(row sqlrows.Scanner) error {
		c, err := scanChunk(row, false)
		if err == nil && match.match(c.ID, c.File, c.Metadata) {
			out = append(out, c.Chunk)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
