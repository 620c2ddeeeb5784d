// Package catalogtest is the conformance suite every kb.Catalog passes:
// the SQLite files (pkg/store/sqlite) and the PostgreSQL registry
// (pkg/store/postgres) run the same tests from their own tests, so a
// knowledge base behaves the same whichever engine keeps it.
//
//	func TestKBCatalog(t *testing.T) {
//		catalogtest.Run(t, func(t *testing.T) kb.Catalog { ... a new, empty catalog ... })
//	}
package catalogtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/pkg/kb"
)

// Opener returns a new, empty catalog and registers its Close (and the
// removal of its databases) with t.Cleanup. It fails or skips t when it
// cannot.
type Opener func(t *testing.T) kb.Catalog

// SharedOpener returns two catalogs over one new, empty store, as two
// replicas would open it, registering their cleanup with t.Cleanup.
type SharedOpener func(t *testing.T) (kb.SharedCatalog, kb.SharedCatalog)

// Run runs the conformance suite, each test on a catalog from open.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, c kb.Catalog)
	}{
		{"CreateOpenExists", testCreateOpenExists},
		{"CreateTaken", testCreateTaken},
		{"Names", testNames},
		{"Drop", testDrop},
		{"RunsTheKBQueries", testQueries},
		{"WritersTakeTurns", testWritersTakeTurns},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// RunShared runs the tests of two catalogs sharing one store, as replicas
// do.
func RunShared(t *testing.T, open SharedOpener) {
	t.Run("SeeEachOther", func(t *testing.T) {
		a, b := open(t)
		testSeeEachOther(t, a, b)
	})
	t.Run("GoneAfterDrop", func(t *testing.T) {
		a, b := open(t)
		testGoneAfterDrop(t, a, b)
	})
}

const name = "周易 上经"

func mustCreate(t *testing.T, c kb.Catalog, name string) *sql.DB {
	t.Helper()
	return mustDB(t, "Create", c.Create, name)
}

func mustOpen(t *testing.T, c kb.Catalog, name string) *sql.DB {
	t.Helper()
	return mustDB(t, "Open", c.Open, name)
}

// mustDB opens the database of knowledge base name through open (the
// catalog's method called what), closed at the end of t.
func mustDB(t *testing.T, what string, open func(context.Context, string) (*sql.DB, error), name string) *sql.DB {
	t.Helper()
	db, err := open(context.Background(), name)
	if err != nil {
		t.Fatalf("%s(%s): %v", what, name, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func setMeta(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, key, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

func getMeta(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	return v, err
}

func testCreateOpenExists(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	if ok, err := c.Exists(ctx, name); ok || err != nil {
		t.Fatalf("Exists before Create = %v, %v; want false, nil", ok, err)
	}
	db := mustCreate(t, c, name)
	if err := setMeta(ctx, db, "info", "易经"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Exists(ctx, name); !ok || err != nil {
		t.Errorf("Exists after Create = %v, %v; want true, nil", ok, err)
	}
	again := mustOpen(t, c, name)
	if v, err := getMeta(ctx, again, "info"); err != nil || v != "易经" {
		t.Errorf("reopened, meta info = %q, %v; want 易经", v, err)
	}
}

func testCreateTaken(t *testing.T, c kb.Catalog) {
	mustCreate(t, c, name)
	if db, err := c.Create(context.Background(), name); !errors.Is(err, fs.ErrExist) {
		if db != nil {
			db.Close()
		}
		t.Errorf("Create of a taken name = %v, want fs.ErrExist", err)
	}
}

func testNames(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	if names, err := c.Names(ctx); err != nil || len(names) != 0 {
		t.Errorf("Names of an empty catalog = %v, %v", names, err)
	}
	for _, n := range []string{"乾", "a", "b_2", "坤"} {
		mustCreate(t, c, n)
	}
	names, err := c.Names(ctx)
	want := []string{"a", "b_2", "乾", "坤"}
	if err != nil || !slices.Equal(names, want) {
		t.Errorf("Names = %v, %v; want %v", names, err, want)
	}
}

func testDrop(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	db := mustCreate(t, c, name)
	if err := setMeta(ctx, db, "info", "old"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := c.Drop(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Exists(ctx, name); ok || err != nil {
		t.Errorf("Exists after Drop = %v, %v; want false, nil", ok, err)
	}
	if names, err := c.Names(ctx); err != nil || slices.Contains(names, name) {
		t.Errorf("Names after Drop = %v, %v", names, err)
	}
	// The name can be taken again, and starts empty.
	db = mustCreate(t, c, name)
	if v, err := getMeta(ctx, db, "info"); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("re-created knowledge base holds meta info %q (%v)", v, err)
	}
}

// testQueries runs statements of the kinds pkg/kb's SQL uses: "?"
// placeholders, upserts, LIKE ... ESCAPE, counts, blobs and the cascade
// from a document to its chunks.
func testQueries(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	db := mustCreate(t, c, name)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, f := range []string{"a_1.md", "ab1.md", `c\d.md`} {
		if _, err := tx.ExecContext(ctx, `INSERT INTO files(name, hash, size, mtime, chunks, created_at, updated_at) VALUES(?,?,?,?,?,?,?)
			ON CONFLICT(name) DO UPDATE SET hash=excluded.hash`, f, "h", 10, 1, 2, 3, 3); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks(id, file, seq, text, metadata, terms, vector) VALUES(?,?,?,?,?,?,?)`,
				fmt.Sprintf("%s-%d", f, i), f, i, "天行健 '?'", `{"k":"v"}`, `{}`, []byte{0, 1, 2, 255}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var like []string
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT file FROM chunks WHERE file LIKE ? ESCAPE '\' ORDER BY file`, `a\_%`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		like = append(like, f)
	}
	rows.Close()
	if !slices.Equal(like, []string{"a_1.md"}) {
		t.Errorf(`LIKE 'a\_%%' ESCAPE '\' = %v, want [a_1.md]`, like)
	}
	var text string
	var vec []byte
	if err := db.QueryRowContext(ctx, `SELECT text, vector FROM chunks WHERE id = ?`, "ab1.md-1").Scan(&text, &vec); err != nil {
		t.Fatal(err)
	}
	if text != "天行健 '?'" || !slices.Equal(vec, []byte{0, 1, 2, 255}) {
		t.Errorf("chunk read back as %q, %v", text, vec)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM files WHERE name = ?`, "ab1.md"); err != nil {
		t.Fatal(err)
	}
	var files, chunks int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)`).Scan(&files, &chunks); err != nil {
		t.Fatal(err)
	}
	if files != 2 || chunks != 4 {
		t.Errorf("after deleting a document: %d files, %d chunks; want 2, 4 (its chunks go with it)", files, chunks)
	}
}

// testWritersTakeTurns increments a counter from several goroutines on
// two handles of one knowledge base, each increment a read and a write in
// one transaction: none may be lost.
func testWritersTakeTurns(t *testing.T, c kb.Catalog) {
	ctx := context.Background()
	dbs := []*sql.DB{mustCreate(t, c, name), mustOpen(t, c, name)}
	const workers, each = 4, 10
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			db := dbs[w%len(dbs)]
			for range each {
				if err := increment(ctx, db); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if v, err := getMeta(ctx, dbs[1], "n"); err != nil || v != strconv.Itoa(workers*each) {
		t.Errorf("counter = %q, %v; want %d", v, err, workers*each)
	}
}

func increment(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	v, err := getMeta(ctx, tx, "n")
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	n, _ := strconv.Atoi(v)
	if err := setMeta(ctx, tx, "n", strconv.Itoa(n+1)); err != nil {
		return err
	}
	return tx.Commit()
}

func testSeeEachOther(t *testing.T, a, b kb.SharedCatalog) {
	ctx := context.Background()
	db := mustCreate(t, a, name)
	if _, err := b.Create(ctx, name); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create on the other replica = %v, want fs.ErrExist", err)
	}
	if ok, err := b.Exists(ctx, name); !ok || err != nil {
		t.Errorf("Exists on the other replica = %v, %v", ok, err)
	}
	if names, err := b.Names(ctx); err != nil || !slices.Equal(names, []string{name}) {
		t.Errorf("Names on the other replica = %v, %v", names, err)
	}
	if err := setMeta(ctx, db, "info", "易经"); err != nil {
		t.Fatal(err)
	}
	if v, err := getMeta(ctx, mustOpen(t, b, name), "info"); err != nil || v != "易经" {
		t.Errorf("the other replica reads %q, %v", v, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO originals(name, data, hash, size, mtime) VALUES(?, ?, ?, ?, ?)`,
		"a.md", []byte("# 乾"), "h", 4, 1); err != nil {
		t.Errorf("a shared catalog's knowledge base keeps originals: %v", err)
	}
	if a.MaxOriginal() <= 0 {
		t.Errorf("MaxOriginal = %d", a.MaxOriginal())
	}
}

func testGoneAfterDrop(t *testing.T, a, b kb.SharedCatalog) {
	ctx := context.Background()
	mustCreate(t, a, name).Close()
	other := mustOpen(t, b, name)
	if _, err := getMeta(ctx, other, "info"); b.Gone(err) {
		t.Errorf("Gone(%v) before the drop", err)
	}
	if err := a.Drop(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, name); ok || err != nil {
		t.Errorf("Exists on the other replica after Drop = %v, %v", ok, err)
	}
	if _, err := getMeta(ctx, other, "info"); !b.Gone(err) {
		t.Errorf("a query on the other replica after the drop: %v, want Gone", err)
	}
	if b.Gone(errors.New("other")) || b.Gone(nil) {
		t.Error("Gone of another error")
	}
}
