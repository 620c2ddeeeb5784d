package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mixchat/mixchat/internal/pgtest"
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

// TestKBCatalog: what one catalog creates, another on the same registry
// lists and opens; a name is created once; dropping removes the schema,
// after which queries on a database still open on it are Gone.
func TestKBCatalog(t *testing.T) {
	dsn := pgtest.Schema(t, "kbcat")
	ctx := context.Background()
	a, err := OpenKBCatalog(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenKBCatalog(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db, err := a.Create(ctx, "周易")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := b.Create(ctx, "周易"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("creating it again: %v, want fs.ErrExist", err)
	}
	if ok, err := b.Exists(ctx, "周易"); !ok || err != nil {
		t.Errorf("Exists on the other catalog = %v, %v", ok, err)
	}
	if names, err := b.Names(ctx); err != nil || !slices.Equal(names, []string{"周易"}) {
		t.Errorf("Names = %v, %v", names, err)
	}
	other, err := b.Open(ctx, "周易")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, "info", "易经"); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := other.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, "info").Scan(&v); err != nil || v != "易经" {
		t.Errorf("the other replica reads %q, %v", v, err)
	}
	if err := a.Drop(ctx, "周易"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Exists(ctx, "周易"); ok || err != nil {
		t.Errorf("Exists after Drop = %v, %v", ok, err)
	}
	err = other.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, "info").Scan(&v)
	if !b.Gone(err) {
		t.Errorf("a query after the drop: %v, want Gone", err)
	}
	if b.Gone(errors.New("other")) || b.Gone(nil) {
		t.Error("Gone of another error")
	}
}
