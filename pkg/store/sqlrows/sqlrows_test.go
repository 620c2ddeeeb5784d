package sqlrows_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

func TestCollect(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t(s TEXT); INSERT INTO t VALUES ('b'), ('a'), ('c')`); err != nil {
		t.Fatal(err)
	}
	got, err := sqlrows.Collect(ctx, db, `SELECT s FROM t WHERE s <> ? ORDER BY s`, []any{"c"}, sqlrows.String)
	if err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Collect = %q, %v; want [a b]", got, err)
	}
	if got, err := sqlrows.Collect(ctx, db, `SELECT s FROM t WHERE s = 'z'`, nil, sqlrows.String); err != nil || got != nil {
		t.Errorf("Collect of no rows = %#v, %v; want nil", got, err)
	}
	bad := errors.New("bad row")
	if _, err := sqlrows.Collect(ctx, db, `SELECT s FROM t`, nil, func(sqlrows.Scanner) (string, error) { return "", bad }); !errors.Is(err, bad) {
		t.Errorf("Collect with a failing scan: %v, want %v", err, bad)
	}
	if _, err := sqlrows.Collect(ctx, db, `SELECT nope FROM t`, nil, sqlrows.String); err == nil {
		t.Error("Collect of a bad query: no error")
	}
}
