package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

// The PostgreSQL tests run against the server at MIXCHAT_TEST_POSTGRES_DSN
// (scripts/postgres.sh starts one), each test in a schema of its own
// dropped afterwards (pgtest.Schema).

func TestPostgres(t *testing.T) {
	pgtest.DSN(t)
	storetest.Run(t, func(t testing.TB) memory.Store {
		return storetest.OpenAt(t, postgres.OpenConversations, pgtest.Schema(t, "mixchat_test"))
	})
}

func TestPostgresShared(t *testing.T) {
	// Two pools on one database behave as two processes would.
	pgtest.DSN(t)
	storetest.RunShared(t, func(t testing.TB) (memory.Store, memory.Store) {
		dsn := pgtest.Schema(t, "mixchat_test")
		return storetest.OpenAt(t, postgres.OpenConversations, dsn), storetest.OpenAt(t, postgres.OpenConversations, dsn)
	})
}

func TestPostgresConcurrentOpen(t *testing.T) {
	// Processes starting together migrate a new database once: the advisory
	// lock makes the others wait and then find the schema in place.
	dsn := pgtest.Schema(t, "mixchat_test")
	ctx := context.Background()
	const n = 6
	stores := storetest.OpenConcurrently(t, n, func(ctx context.Context) (memory.Store, error) {
		return postgres.OpenConversations(ctx, dsn)
	})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	storetest.CheckMigrations(t, func(query string, dest ...any) error {
		return conn.QueryRow(ctx, query).Scan(dest...)
	})

	// Reopening applies nothing and keeps the data.
	turn, err := stores[0].AppendTurn(ctx, "c", memory.Message{Content: "q"}, memory.Message{Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	again := storetest.OpenAt(t, postgres.OpenConversations, dsn)
	turns, err := again.Turns(ctx, "c", 0)
	if err != nil || len(turns) != n+1 || turns[n].Answer.ID != turn.Answer.ID {
		t.Errorf("after reopening Turns = %+v, %v; want %d turns ending with %+v", turns, err, n+1, turn)
	}
}

func TestOpenConversationsErrors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"postgres://127.0.0.1:1/none?connect_timeout=2", "not a dsn ==="} {
		if s, err := postgres.OpenConversations(ctx, dsn); err == nil {
			s.Close()
			t.Errorf("OpenConversations(%q): no error", dsn)
		}
	}
}

func BenchmarkPostgres(b *testing.B) {
	pgtest.DSN(b)
	storetest.Benchmark(b, func(t testing.TB) memory.Store {
		return storetest.OpenAt(t, postgres.OpenConversations, pgtest.Schema(t, "mixchat_test"))
	})
}

func TestPing(t *testing.T) {
	storetest.Ping(t, postgres.OpenConversations, pgtest.Schema(t, "mixchat_test"))
}

// TestPoolSettingsInDSN: a DSN written for pgx's pool (pool_max_conns)
// opens, as it did when the store was a pgxpool.Pool.
func TestPoolSettingsInDSN(t *testing.T) {
	dsn := pgtest.Schema(t, "mixchat_test")
	s := storetest.OpenAt(t, postgres.OpenConversations, dsn+"&pool_max_conns=2")
	if _, err := s.AppendTurn(context.Background(), "c", memory.Message{Content: "q"}, memory.Message{Content: "a"}); err != nil {
		t.Fatal(err)
	}
}
