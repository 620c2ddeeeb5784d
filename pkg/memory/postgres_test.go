package memory_test

import (
	"context"
	"testing"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

func postgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.DSN(t)
}

// newPostgresSchema is a schema of t's own (see pgtest.Schema).
func newPostgresSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t, "mixchat_test")
}

// openPostgres opens the conversations store in a schema of t's own (see
// pgtest.Schema), closed at the end of t.
func openPostgres(t testing.TB, dsn string) *postgres.Conversations {
	t.Helper()
	return storetest.OpenAt(t, postgres.OpenConversations, dsn)
}

// TestPostgresConcurrentCloseAcrossManagers: two Managers on one database
// (two replicas, each with its own idle closer) closing the same
// conversation at once fold its turns into the user's memory once.
func TestPostgresConcurrentCloseAcrossManagers(t *testing.T) {
	dsn := newPostgresSchema(t)
	ctx := context.Background()
	sa, sb := openPostgres(t, dsn), openPostgres(t, dsn)
	ma := newManager(t, sa, nil, memory.Options{})
	mb := newManager(t, sb, nil, memory.Options{})
	for round, conv := range []string{"e1", "e2", "e3"} {
		createConv(t, sa, conv, "erin")
		add(t, sa, ma, conv, "My name is Erin and I live in Lyon.", "Hello, Erin.", "I study the Zhouyi.", "Good.")
		flush(t, ma)
		// Six closes at once, alternating between the two managers.
		consolidated := closeConcurrently(t, conv, ma, mb, ma, mb, ma, mb)
		mem, err := mb.UserMemory(ctx, "erin")
		if err != nil {
			t.Fatal(err)
		}
		if consolidated != 1 || mem.Version != int64(round+1) {
			t.Errorf("%s: %d of %d concurrent closes on two managers consolidated, memory version %d; want 1 and %d",
				conv, consolidated, 6, mem.Version, round+1)
		}
	}
}
