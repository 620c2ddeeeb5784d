package memory

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path"
	"sort"

	_ "modernc.org/sqlite" // the SQLite driver, for this package's own tests
)

// OpenSQLite opens an SQLStore on a SQLite database at p (":memory:"
// included) for the package's internal tests, which cannot import
// pkg/store/sqlite (it imports this package). It applies the migrations of
// pkg/store/sqlite from its source folder and writes SQLite's dialect as
// that package does; the external tests use pkg/store/sqlite itself.
func OpenSQLite(ctx context.Context, p string) (*testSQLite, error) {
	db, err := sql.Open("sqlite", p+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	dir := os.DirFS("../store/sqlite/migrations")
	names, err := fs.Glob(dir, "*.sql")
	if err != nil {
		db.Close()
		return nil, err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(dir, path.Base(n))
		if err == nil {
			_, err = db.ExecContext(ctx, string(b))
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	d := SQLDialect{
		Greatest: "max", JSONArg: "?", JSONText: "%s",
		SetFeedback: `UPDATE messages SET metadata = json_set(metadata, '$.feedback', json(?)) WHERE id = ?`,
	}
	return &testSQLite{SQLStore: NewSQLStore(db, db, d), db: db}, nil
}

type testSQLite struct {
	*SQLStore
	db *sql.DB
}

func (s *testSQLite) Close() error { return s.db.Close() }
