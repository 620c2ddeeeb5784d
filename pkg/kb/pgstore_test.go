package kb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// errOutage is the cause of downCatalog's failures.
var errOutage = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

// downCatalog is a catalog whose registry cannot be reached, as in an
// outage: every lookup fails as pkg/store/postgres's KBCatalog fails then
// (pkg/store/postgres tests that it does).
type downCatalog struct{ Catalog }

func (downCatalog) fail(name string) error {
	return fmt.Errorf("knowledge base %s: look up in the PostgreSQL registry: %w", name, errOutage)
}

func (c downCatalog) Exists(ctx context.Context, name string) (bool, error) {
	return false, c.fail(name)
}
func (c downCatalog) Open(ctx context.Context, name string) (*sql.DB, error) {
	return nil, c.fail(name)
}
func (c downCatalog) Create(ctx context.Context, name string) (*sql.DB, error) {
	return nil, c.fail(name)
}
func (c downCatalog) Names(ctx context.Context) ([]string, error) { return nil, c.fail("") }

// downRegistry makes s's catalog unreachable.
func downRegistry(t *testing.T, s *Service) {
	t.Helper()
	s.mu.Lock()
	s.cat = downCatalog{s.cat}
	s.mu.Unlock()
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
		case !errors.Is(err, errOutage) || !strings.Contains(err.Error(), "knowledge base "+name):
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

// TestPostgresOutageIsNotAMissingKB needs no server: the catalog fails as
// an unreachable registry does.
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
