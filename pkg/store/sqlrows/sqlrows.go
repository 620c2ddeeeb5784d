// Package sqlrows reads the rows of a database/sql query into a slice: the
// one loop over *sql.Rows the stores share.
package sqlrows

import (
	"context"
	"database/sql"
)

// Scanner is the row being read (an alias, so that any func of an
// interface{ Scan(...any) error } is a scan function).
type Scanner = interface {
	Scan(dest ...any) error
}

// Querier runs a query: a *sql.DB, *sql.Tx or *sql.Conn.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Collect runs query with args on q and returns what scan makes of each
// row, in order (nil when there is none). A failing scan ends it with that
// error.
func Collect[T any](ctx context.Context, q Querier, query string, args []any, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	err := Each(ctx, q, query, args, func(row Scanner) error {
		v, err := scan(row)
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each runs query with args on q and calls fn with each row, in order,
// until fn fails; the rows are closed when it returns.
func Each(ctx context.Context, q Querier, query string, args []any, fn func(Scanner) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// String scans a row of one text column.
func String(s Scanner) (string, error) {
	var v string
	err := s.Scan(&v)
	return v, err
}
