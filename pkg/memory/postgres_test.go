package memory_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/memory/storetest"
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

func openPostgres(t testing.TB, dsn string) *memory.Postgres {
	t.Helper()
	s, err := memory.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
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
	stores := make([]*memory.Postgres, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = memory.OpenPostgres(ctx, dsn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("OpenPostgres %d: %v", i, err)
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

func TestOpenPostgresErrors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"postgres://127.0.0.1:1/none?connect_timeout=2", "not a dsn ==="} {
		if s, err := memory.OpenPostgres(ctx, dsn); err == nil {
			s.Close()
			t.Errorf("OpenPostgres(%q): no error", dsn)
		}
	}
}

func BenchmarkPostgres(b *testing.B) {
	postgresDSN(b)
	storetest.Benchmark(b, func(t testing.TB) memory.Store {
		return openPostgres(t, newPostgresSchema(t))
	})
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
		results := make([]memory.Closed, 6)
		errs := make([]error, len(results))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range results {
			m := ma
			if i%2 == 1 {
				m = mb
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = m.CloseConversation(ctx, conv)
			}()
		}
		close(start)
		wg.Wait()
		consolidated := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if r.Consolidated {
				consolidated++
			}
		}
		mem, err := mb.UserMemory(ctx, "erin")
		if err != nil {
			t.Fatal(err)
		}
		if consolidated != 1 || mem.Version != int64(round+1) {
			t.Errorf("%s: %d of %d concurrent closes on two managers consolidated, memory version %d; want 1 and %d",
				conv, consolidated, len(results), mem.Version, round+1)
		}
	}
}
