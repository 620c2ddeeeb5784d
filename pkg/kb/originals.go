package kb

// The originals of a knowledge base whose catalog is shared by replicas
// (SharedCatalog): kept in its database's originals table, so that every
// replica serves downloads and rebuilds from them.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

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
