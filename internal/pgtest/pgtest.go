// Package pgtest gives tests a PostgreSQL schema of their own on the test
// server named by MIXCHAT_TEST_POSTGRES_DSN (scripts/postgres.sh starts one
// and prints it). Tests that need PostgreSQL are skipped where it is unset.
//
// Only tests import this package.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvDSN is the variable naming the test server.
const EnvDSN = "MIXCHAT_TEST_POSTGRES_DSN"

// DSN returns the test server's DSN, skipping tb when none is set.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		tb.Skip(EnvDSN + " is not set; start a server with: eval \"$(scripts/postgres.sh start)\"")
	}
	return dsn
}

// Schema creates a schema named prefix_<random hex> on the test server and
// returns a DSN whose search_path selects it. At the end of tb it drops the
// schema and the knowledge bases' schemas named after it (NAME_kb_*).
func Schema(tb testing.TB, prefix string) string {
	tb.Helper()
	dsn := DSN(tb)
	b := make([]byte, 6)
	rand.Read(b)
	schema := prefix + "_" + hex.EncodeToString(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect to %s: %v", EnvDSN, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() { drop(tb, dsn, schema) })
	return WithSearchPath(tb, dsn, schema)
}

func drop(tb testing.TB, dsn, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $1 || '\_kb\_%'`, schema)
	if err != nil {
		tb.Errorf("list schemas: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Errorf("list schemas: %v", err)
		return
	}
	for _, n := range names {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{n}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", n, err)
		}
	}
}

// WithSearchPath adds search_path=schema to a URL or key=value DSN.
func WithSearchPath(tb testing.TB, dsn, schema string) string {
	tb.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatalf("%s: %v", EnvDSN, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}
