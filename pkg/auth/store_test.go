package auth_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/store/postgres"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// The store tests run the same suite on SQLite and, when
// MIXCHAT_TEST_POSTGRES_DSN is set (scripts/postgres.sh), on PostgreSQL,
// each test in a new schema dropped afterwards.

func openSQLite(t *testing.T) *auth.Store {
	t.Helper()
	s, err := sqlite.OpenKeys(context.Background(), filepath.Join(t.TempDir(), "auth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func postgresSchemaDSN(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t, "mixchat_auth_test")
}

func openPostgres(t *testing.T, dsn string) *auth.Store {
	t.Helper()
	s, err := postgres.OpenKeys(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreSQLite(t *testing.T) { runStoreTests(t, openSQLite) }

func TestStorePostgres(t *testing.T) {
	runStoreTests(t, func(t *testing.T) *auth.Store { return openPostgres(t, postgresSchemaDSN(t)) })
}

// TestReopen checks that opening a migrated database again keeps its keys
// and that processes opening one database at once migrate it once.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "auth.db")
		a, err := sqlite.OpenKeys(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := a.CreateKey(ctx, auth.KeySpec{UserID: "u", Role: auth.RoleUser})
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		b, err := sqlite.OpenKeys(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if p, err := b.Authenticate(ctx, tok); err != nil || p.UserID != "u" {
			t.Fatalf("after reopen: %+v, %v", p, err)
		}
	})
	t.Run("postgres concurrent", func(t *testing.T) {
		dsn := postgresSchemaDSN(t)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				s, err := postgres.OpenKeys(ctx, dsn)
				if err == nil {
					s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
}

func runStoreTests(t *testing.T, open func(t *testing.T) *auth.Store) {
	ctx := context.Background()
	t.Run("create and authenticate", func(t *testing.T) {
		s := open(t)
		tok, k, err := s.CreateKey(ctx, auth.KeySpec{UserID: "alice", Role: auth.RoleAdmin, Name: "laptop", RequestsPerMinute: 5, TokensPerMinute: 100})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok, auth.TokenPrefix) || len(tok) < 40 {
			t.Fatalf("token %q: want mx- and 43 characters", tok)
		}
		if !strings.HasPrefix(tok, k.Prefix) || k.Prefix == tok {
			t.Fatalf("prefix %q of %q", k.Prefix, tok)
		}
		p, err := s.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		want := auth.Principal{UserID: "alice", Role: auth.RoleAdmin, KeyID: k.ID, RequestsPerMinute: 5, TokensPerMinute: 100}
		if p != want {
			t.Fatalf("principal %+v, want %+v", p, want)
		}
		for _, bad := range []string{"", "mx-", tok + "x", tok[:len(tok)-1], strings.TrimPrefix(tok, "mx-"), auth.HashToken(tok)} {
			if _, err := s.Authenticate(ctx, bad); !errors.Is(err, auth.ErrUnauthorized) {
				t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", bad, err)
			}
		}
	})
	t.Run("token is stored hashed", func(t *testing.T) {
		s := open(t)
		tok, _, err := s.CreateKey(ctx, auth.KeySpec{UserID: "alice", Role: auth.RoleUser})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := s.Keys(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if strings.Contains(k.ID+k.Prefix+k.Name, tok) {
				t.Fatalf("key record %+v holds the token", k)
			}
		}
	})
	t.Run("invalid specs", func(t *testing.T) {
		s := open(t)
		for _, spec := range []auth.KeySpec{
			{UserID: "", Role: auth.RoleUser},
			{UserID: "bob", Role: "root"},
			{UserID: "bob", Role: auth.RoleUser, RequestsPerMinute: -1},
			{UserID: strings.Repeat("u", 129), Role: auth.RoleUser},
		} {
			if _, _, err := s.CreateKey(ctx, spec); err == nil {
				t.Errorf("CreateKey(%+v) succeeded", spec)
			}
		}
	})
	t.Run("list and revoke", func(t *testing.T) {
		s := open(t)
		tokA, a, err := s.CreateKey(ctx, auth.KeySpec{UserID: "alice", Role: auth.RoleUser})
		if err != nil {
			t.Fatal(err)
		}
		tokB, b, err := s.CreateKey(ctx, auth.KeySpec{UserID: "bob", Role: auth.RoleUser})
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.Keys(ctx, "")
		if err != nil || len(all) != 2 {
			t.Fatalf("Keys = %v, %v; want 2", all, err)
		}
		bobs, err := s.Keys(ctx, "bob")
		if err != nil || len(bobs) != 1 || bobs[0].ID != b.ID {
			t.Fatalf("Keys(bob) = %v, %v", bobs, err)
		}
		r, err := s.RevokeKey(ctx, a.ID)
		if err != nil || r.RevokedAt == 0 {
			t.Fatalf("RevokeKey = %+v, %v", r, err)
		}
		if _, err := s.Authenticate(ctx, tokA); !errors.Is(err, auth.ErrUnauthorized) {
			t.Fatalf("revoked key authenticates: %v", err)
		}
		if _, err := s.Authenticate(ctx, tokB); err != nil {
			t.Fatalf("other key stopped working: %v", err)
		}
		if _, err := s.RevokeKey(ctx, a.ID); err != nil {
			t.Fatalf("revoking twice: %v", err)
		}
		if _, err := s.RevokeKey(ctx, b.Prefix); err != nil {
			t.Fatalf("revoke by prefix: %v", err)
		}
		if _, err := s.Authenticate(ctx, tokB); !errors.Is(err, auth.ErrUnauthorized) {
			t.Fatalf("key revoked by prefix authenticates: %v", err)
		}
		if _, err := s.RevokeKey(ctx, "key_nope"); !errors.Is(err, auth.ErrNotFound) {
			t.Fatalf("RevokeKey(unknown) = %v, want ErrNotFound", err)
		}
	})
	t.Run("kb access", func(t *testing.T) {
		s := open(t)
		a, err := s.KBAccess(ctx, "zhouyi")
		if err != nil || a.Private {
			t.Fatalf("KB without record: %+v, %v; want public", a, err)
		}
		set := auth.KBAccess{KB: "zhouyi", Owner: "alice", Private: true, Grants: []string{"carol", "bob", "bob", ""}}
		if err := s.SetKBAccess(ctx, set); err != nil {
			t.Fatal(err)
		}
		a, err = s.KBAccess(ctx, "zhouyi")
		if err != nil {
			t.Fatal(err)
		}
		if !a.Private || a.Owner != "alice" || strings.Join(a.Grants, ",") != "bob,carol" {
			t.Fatalf("KBAccess = %+v", a)
		}
		set.Grants = []string{"dave"}
		if err := s.SetKBAccess(ctx, set); err != nil {
			t.Fatal(err)
		}
		if a, _ = s.KBAccess(ctx, "zhouyi"); strings.Join(a.Grants, ",") != "dave" {
			t.Fatalf("grants not replaced: %+v", a)
		}
		if err := s.DeleteKBAccess(ctx, "zhouyi"); err != nil {
			t.Fatal(err)
		}
		if a, _ = s.KBAccess(ctx, "zhouyi"); a.Private || len(a.Grants) != 0 {
			t.Fatalf("after delete: %+v", a)
		}
	})
	t.Run("concurrent creates", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		toks := make([]string, 8)
		errs := make([]error, 8)
		for i := range toks {
			wg.Go(func() { toks[i], _, errs[i] = s.CreateKey(ctx, auth.KeySpec{UserID: "u", Role: auth.RoleUser}) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for _, tok := range toks {
			if _, err := s.Authenticate(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	})
}
