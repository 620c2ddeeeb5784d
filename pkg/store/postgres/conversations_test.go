package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
	"github.com/mixchat/mixchat/pkg/store/postgres"
)

// The PostgreSQL tests run against the server at MIXCHAT_TEST_POSTGRES_DSN
// (scripts/postgres.sh starts one), each test in a new schema dropped
// afterwards.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.DSN(t)
}

// newPostgresSchema is a schema of t's own (see pgtest.Schema).
func newPostgresSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t, "mixchat_test")
}

func openPostgres(t testing.TB, dsn string) *postgres.Conversations {
	t.Helper()
	s, err := postgres.OpenConversations(context.Background(), dsn)
	if err != nil {
		t.Fatalf("OpenConversations: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgres(t *testing.T) {
	postgresDSN(t)
	storetest.Run(t, func(t testing.TB) memory.Store {
		return openPostgres(t, newPostgresSchema(t))
	})
}

func TestPostgresShared(t *testing.T) {
	// Two pools on one database behave as two processes would.
	postgresDSN(t)
	storetest.RunShared(t, func(t testing.TB) (memory.Store, memory.Store) {
		dsn := newPostgresSchema(t)
		return openPostgres(t, dsn), openPostgres(t, dsn)
	})
}

func TestPostgresConcurrentOpen(t *testing.T) {
	// Processes starting together migrate a new database once: the advisory
	// lock makes the others wait and then find the schema in place.
	dsn := newPostgresSchema(t)
	ctx := context.Background()
	const n = 6
	stores := make([]*postgres.Conversations, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.OpenConversations(ctx, dsn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("OpenConversations %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, versions, first int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version), min(version) FROM schema_migrations`).
		Scan(&rows, &versions, &first); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows != versions || first != 1 {
		t.Errorf("schema_migrations has %d rows, %d versions, first %d; want each version once from 1", rows, versions, first)
	}

	// Reopening applies nothing and keeps the data.
	turn, err := stores[0].AppendTurn(ctx, "c", memory.Message{Content: "q"}, memory.Message{Content: "a"})
	if err != nil {
		t.Fatal(err)
	}
	again := openPostgres(t, dsn)
	turns, err := again.Turns(ctx, "c", 0)
	if err != nil || len(turns) != 1 || turns[0].Answer.ID != turn.Answer.ID {
		t.Errorf("after reopening Turns = %+v, %v; want [%+v]", turns, err, turn)
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
	postgresDSN(b)
	storetest.Benchmark(b, func(t testing.TB) memory.Store {
		return openPostgres(t, newPostgresSchema(t))
	})
}


func TestPing(t *testing.T) {
	dsn := newPostgresSchema(t)
	ctx := context.Background()
	p, err := postgres.OpenConversations(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	p.Close()
	if err := p.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed pool succeeded")
	}
}
