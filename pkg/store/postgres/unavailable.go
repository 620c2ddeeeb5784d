package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mixchat/mixchat/pkg/store"
)

// unavailable wraps err with store.ErrUnavailable when it says the database
// cannot be reached, not that the request failed: a refused or timed-out
// connection, a connection the server closed, a server shutting down or
// starting up. An error of a context that ended is left as it is (the
// caller gave up), and so is driver.ErrBadConn, which database/sql answers
// by retrying on another connection.
func unavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, store.ErrUnavailable) || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// unreachable reports whether err is a failure to reach the database.
func unreachable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		// Class 08: connection exception; 57P01-57P03: the server is
		// shutting down, crashed, or cannot accept connections yet.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	case errors.As(err, &ce), errors.As(err, &ne):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true // the server closed the connection
	}
	return pgconn.SafeToRetry(err) // the connection was closed before the query was sent
}

// connector connects through pgx's database/sql driver, marking the
// failures to connect, and its connections' failures, with
// store.ErrUnavailable.
type connector struct {
	base driver.Connector
}

func newConnector(base driver.Connector) *connector { return &connector{base: base} }

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	sc, ok := cn.(*stdlib.Conn)
	if !ok {
		cn.Close()
		return nil, errors.New("postgres: unexpected driver connection")
	}
	return &conn{Conn: sc}, nil
}

func (c *connector) Driver() driver.Driver { return c.base.Driver() }

// conn is a pgx connection whose failures to reach the server are marked
// with store.ErrUnavailable. Its other methods are pgx's.
type conn struct {
	*stdlib.Conn
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	ps, ok := st.(*stdlib.Stmt)
	if !ok {
		st.Close()
		return nil, errors.New("postgres: unexpected driver statement")
	}
	return &stmt{Stmt: ps}, nil
}

// stmt is a prepared statement whose failures to reach the server are
// marked with store.ErrUnavailable, as its connection's are.
type stmt struct {
	*stdlib.Stmt
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.Stmt.ExecContext(ctx, args)
	return r, unavailable(ctx, err)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.Stmt.QueryContext(ctx, args)
	return r, unavailable(ctx, err)
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.ExecContext(ctx, query, args)
	return r, unavailable(ctx, err)
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.QueryContext(ctx, query, args)
	return r, unavailable(ctx, err)
}

func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.BeginTx(ctx, opts)
	return tx, unavailable(ctx, err)
}

func (c *conn) Ping(ctx context.Context) error {
	return unavailable(ctx, c.Conn.Ping(ctx))
}

// pingBeforeReuse has a connection checked (pinged) before it is reused
// when it has been idle for more than pingIdle, instead of pgx's one
// second: a server restarted in less than that leaves every pooled
// connection dead, and the first query on each would fail with
// ErrUnavailable though the server is back. A ping that fails makes
// database/sql open a new connection.
var pingBeforeReuse = stdlib.OptionShouldPing(func(_ context.Context, p stdlib.ShouldPingParams) bool {
	return p.IdleDuration > pingIdle
})

// pingIdle is how long a connection may stay unused before it is pinged
// on reuse: a loopback round trip (~0.1 ms) per query after a pause, none
// under load.
const pingIdle = 50 * time.Millisecond
