package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/pkg/memory"
)

func TestSQLitePing(t *testing.T) {
	ctx := context.Background()
	s, err := memory.OpenSQLite(ctx, filepath.Join(t.TempDir(), "mixchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping on an open store: %v", err)
	}
	s.Close()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed store succeeded")
	}
}

func TestPostgresPing(t *testing.T) {
	dsn := newPostgresSchema(t)
	ctx := context.Background()
	p, err := memory.OpenPostgres(ctx, dsn)
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
