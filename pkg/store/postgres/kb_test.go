package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/kb/catalogtest"
)

// TestKBCatalogOutage needs no server: with the registry at a closed port,
// every lookup is an error naming the registry, never "not registered".
func TestKBCatalogOutage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://mixchat@127.0.0.1:%d/mixchat?sslmode=disable&connect_timeout=5", port))
	if err != nil {
		t.Fatal(err)
	}
	c := &KBCatalog{dsn: cfg.ConnString(), prefix: "mixchat_kb_", reg: stdlib.OpenDB(*cfg)}
	defer c.Close()
	ctx := context.Background()
	ok, err := c.Exists(ctx, "周易")
	if ok || err == nil || !strings.Contains(err.Error(), "knowledge base 周易") || !strings.Contains(err.Error(), "PostgreSQL registry") {
		t.Errorf("Exists during an outage = %v, %v; want an error naming the knowledge base and the registry", ok, err)
	}
	if _, err := c.Names(ctx); err == nil {
		t.Error("Names during an outage: no error")
	}
	if _, err := c.Create(ctx, "周易"); err == nil || errors.Is(err, fs.ErrExist) {
		t.Errorf("Create during an outage = %v; want an error, not 'exists'", err)
	}
}

// openKBCatalog opens a catalog on a registry schema of t's own (see
// pgtest.Schema), closed at the end of t.
func openKBCatalog(t *testing.T, dsn string) *KBCatalog {
	t.Helper()
	c, err := OpenKBCatalog(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestKBCatalog(t *testing.T) {
	pgtest.DSN(t)
	catalogtest.Run(t, func(t *testing.T) kb.Catalog { return openKBCatalog(t, pgtest.Schema(t, "kbcat")) })
}

func TestKBCatalogShared(t *testing.T) {
	pgtest.DSN(t)
	catalogtest.RunShared(t, func(t *testing.T) (kb.SharedCatalog, kb.SharedCatalog) {
		dsn := pgtest.Schema(t, "kbcat")
		return openKBCatalog(t, dsn), openKBCatalog(t, dsn)
	})
}
