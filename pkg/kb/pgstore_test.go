package kb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// downRegistry makes s's PostgreSQL registry unreachable, as in an outage:
// its connections go to a local port nothing listens on.
func downRegistry(t *testing.T, s *Service) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().(*net.TCPAddr)
	l.Close()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://mixchat@127.0.0.1:%d/mixchat?sslmode=disable&connect_timeout=5", addr.Port))
	if err != nil {
		t.Fatal(err)
	}
	if s.pg == nil {
		s.pg = &pgStore{prefix: "mixchat_kb_", synced: map[string]syncState{}}
	} else {
		s.pg.reg.Close()
	}
	s.pg.reg = stdlib.OpenDB(*cfg)
}

// checkOutage checks that s reports the outage, not a missing knowledge
// base, for name (not open on s).
func checkOutage(t *testing.T, s *Service, name string) {
	t.Helper()
	ctx := context.Background()
	isOutage := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error during an outage", what)
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrExists):
			t.Errorf("%s: %v: an outage reads as a missing (or existing) knowledge base", what, err)
		case !strings.Contains(err.Error(), "knowledge base "+name) || !strings.Contains(err.Error(), "PostgreSQL registry"):
			t.Errorf("%s: %v, want the context (knowledge base, registry) and the cause", what, err)
		}
	}
	_, err := s.Search(ctx, SearchRequest{Query: "乾卦", KnowledgeBases: []string{name}, TopK: 3})
	isOutage("Search", err)
	_, err = s.Info(ctx, name)
	isOutage("Info", err)
	_, err = s.ListChunks(ctx, name, "", nil)
	isOutage("ListChunks", err)
	_, err = s.Create(ctx, name, CreateOptions{})
	isOutage("Create", err)
	_, err = s.AddFiles(ctx, name, []FileData{{Name: "a.md", Data: []byte("# 乾卦\n\n乾，元亨，利贞。")}}, AddOptions{}, nil)
	isOutage("AddFiles", err)
	_, err = s.Exists(ctx, name)
	isOutage("Exists", err)
}

// TestPostgresOutageIsNotAMissingKB needs no server: the registry points
// at a closed port.
func TestPostgresOutageIsNotAMissingKB(t *testing.T) {
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	downRegistry(t, s)
	checkOutage(t, s, "周易")
}

// TestPostgresStoreOutage: a knowledge base that exists in PostgreSQL but
// is not yet open on a replica reads as an error, not as unknown, while
// the database is unreachable.
func TestPostgresStoreOutage(t *testing.T) {
	dsn := pgServiceDSN(t)
	a, b := newPGService(t, dsn), newPGService(t, dsn)
	if _, err := a.Create(context.Background(), "周易", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(context.Background(), "周易"); !ok || err != nil {
		t.Fatalf("replica b does not see the KB replica a created: %v, %v", ok, err)
	}
	downRegistry(t, b)
	checkOutage(t, b, "周易")
}
