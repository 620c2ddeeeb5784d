package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mixchat/mixchat/pkg/store"
)

func TestUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, refused := pgx.Connect(context.Background(), "postgres://mixchat@"+closed+"/prod?connect_timeout=2")
	if refused == nil {
		t.Fatal("connected to a closed port")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"connection refused", context.Background(), refused, true},
		{"server closed the connection", context.Background(), fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"server shutting down", context.Background(), &pgconn.PgError{Code: "57P01"}, true},
		{"server starting", context.Background(), &pgconn.PgError{Code: "57P03"}, true},
		{"connection exception", context.Background(), &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", context.Background(), &pgconn.PgError{Code: "23505"}, false},
		{"bad connection: database/sql retries", context.Background(), driver.ErrBadConn, false},
		{"caller gave up", cancelled, refused, false},
		{"plain", context.Background(), errors.New("syntax"), false},
	} {
		err := unavailable(tc.ctx, tc.err)
		if got := errors.Is(err, store.ErrUnavailable); got != tc.want {
			t.Errorf("%s: unavailable(%v) marked %v, want %v", tc.name, tc.err, got, tc.want)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: %v does not wrap %v", tc.name, err, tc.err)
		}
	}
}
