// Package postgres keeps mixchat's data in PostgreSQL (the pgx driver), for
// several mixchat processes sharing it: the conversations and memory of
// pkg/memory (OpenConversations), the API keys and knowledge-base access
// records of pkg/auth (OpenKeys), and the knowledge bases of pkg/kb, one
// schema each under a registry (OpenKBCatalog).
//
// It is the only package besides pkg/store/sqlite that imports a database
// driver: the SQL the stores share lives in the packages that own the data,
// written with SQLite's "?" placeholders on database/sql, and this package
// opens the connections, migrates the schemas, numbers the placeholders
// (Rebind) and says how PostgreSQL's dialect differs. Its connections mark
// the failures to reach the server with store.ErrUnavailable, which the
// HTTP server answers with 503. To keep the tables
// in a schema other than public, add search_path to the DSN
// (postgres://host/db?search_path=mixchat).
package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// open connects to dsn through database/sql with pgx's driver and checks
// that the server answers. The DSN is read as pgx's pool reads it, so its
// pool_max_conns (default: 4 or the number of cores, whichever is more)
// bounds the connections; maxConns, when positive, overrides it. The
// parsed configuration is returned for connections of their own outside
// the pool.
func open(ctx context.Context, dsn string, maxConns int) (*sql.DB, *pgx.ConnConfig, error) {
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	if maxConns <= 0 {
		maxConns = int(pcfg.MaxConns)
	}
	cfg := pcfg.ConnConfig
	// Failures to reach the server are marked store.ErrUnavailable, so
	// the server answers them with 503 and keeps their detail in its log.
	db := sql.OpenDB(newConnector(stdlib.GetConnector(*cfg.Copy(), pingBeforeReuse)))
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, cfg, nil
}

// Rebind numbers the "?" placeholders of query outside quoted text: "?" →
// "$1", "$2", ... The stores' SQL is written with SQLite's placeholders.
// (Written here rather than taken from a library: the rule is tiny and the
// SQL is ours.)
func Rebind(query string) string {
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
