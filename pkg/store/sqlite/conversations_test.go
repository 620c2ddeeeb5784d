package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t testing.TB) memory.Store {
		return storetest.OpenAt(t, sqlite.OpenConversations, filepath.Join(t.TempDir(), "memory.db"))
	})
}

func TestSQLiteInMemory(t *testing.T) {
	storetest.Run(t, func(t testing.TB) memory.Store {
		return storetest.OpenAt(t, sqlite.OpenConversations, ":memory:")
	})
}

func TestSQLiteShared(t *testing.T) {
	// Two stores on one file behave as two processes would.
	storetest.RunShared(t, func(t testing.TB) (memory.Store, memory.Store) {
		path := filepath.Join(t.TempDir(), "memory.db")
		return storetest.OpenAt(t, sqlite.OpenConversations, path), storetest.OpenAt(t, sqlite.OpenConversations, path)
	})
}

func TestSQLiteReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "dir", "memory.db") // directories are created
	s, err := sqlite.OpenConversations(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q"}, memory.Message{Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = storetest.OpenAt(t, sqlite.OpenConversations, path)
	turns, err := s.Turns(ctx, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Answer.ID != want.Answer.ID {
		t.Errorf("after reopening Turns = %+v, want [%+v]", turns, want)
	}
	if next, err := s.AppendTurn(ctx, "c", memory.Message{Content: "q"}, memory.Message{Content: "a"}); err != nil || next.ID != 2 {
		t.Errorf("AppendTurn after reopening = turn %d, %v; want turn 2", next.ID, err)
	}
	checkSQLiteSchema(t, path)
}

// checkSQLiteSchema opens the file directly and checks that every migration
// was recorded once and the database is in WAL mode.
func checkSQLiteSchema(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.CheckMigrations(t, func(query string, dest ...any) error {
		return db.QueryRow(query).Scan(dest...)
	})
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestSQLiteConcurrentOpen(t *testing.T) {
	// Processes starting together migrate a new file once, without SQLITE_BUSY.
	path := filepath.Join(t.TempDir(), "memory.db")
	storetest.OpenConcurrently(t, 6, func(ctx context.Context) (memory.Store, error) {
		return sqlite.OpenConversations(ctx, path)
	})
	checkSQLiteSchema(t, path)
}

func TestOpenConversationsErrors(t *testing.T) {
	for _, path := range []string{"", filepath.Join(t.TempDir(), "a?b.db")} {
		if s, err := sqlite.OpenConversations(context.Background(), path); err == nil {
			s.Close()
			t.Errorf("OpenConversations(%q): no error", path)
		}
	}
}

func BenchmarkSQLite(b *testing.B) {
	storetest.Benchmark(b, func(t testing.TB) memory.Store {
		return storetest.OpenAt(t, sqlite.OpenConversations, filepath.Join(t.TempDir(), "memory.db"))
	})
}

func TestPing(t *testing.T) {
	storetest.Ping(t, sqlite.OpenConversations, filepath.Join(t.TempDir(), "mixchat.db"))
}
