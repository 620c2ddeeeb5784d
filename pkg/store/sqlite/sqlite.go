// Package sqlite keeps mixchat's data in SQLite files (the pure-Go
// modernc.org/sqlite driver), for a single machine: the conversations and
// memory of pkg/memory (OpenConversations), the API keys and knowledge-base
// access records of pkg/auth (OpenKeys), and the knowledge bases of pkg/kb,
// a folder with a kb.db file each (NewKBCatalog).
//
// It is the only package besides pkg/store/postgres that imports a database
// driver: the SQL the stores share lives in the packages that own the data,
// on database/sql, and this package opens the files, migrates them and says
// how SQLite's dialect differs.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"runtime"
	"strconv"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver (pure Go)
	sqlite3 "modernc.org/sqlite/lib"
)

// busyTimeout is how long, in milliseconds, a connection waits for another
// connection's lock before failing with SQLITE_BUSY.
const busyTimeout = 10000

// openConversationDB opens a connection pool on the file at path: one
// writing connection (WAL mode, synchronous=NORMAL, transactions BEGIN
// IMMEDIATE), or with readOnly query_only connections, one per core.
func openConversationDB(ctx context.Context, path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.Itoa(busyTimeout))
	q.Set("_foreign_keys", "1")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		if path != ":memory:" {
			q.Set("_journal_mode", "WAL")
		}
		q.Set("_synchronous", "NORMAL")
		q.Set("_txlock", "immediate")
	}
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	if readOnly {
		n := max(4, runtime.GOMAXPROCS(0))
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	} else {
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
	}
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := connect(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openFile opens the SQLite file at path with the pragmas every store
// here wants besides the conversations' (WAL, a busy timeout, foreign keys,
// synchronous=NORMAL, transactions BEGIN IMMEDIATE), on at most maxConns
// connections (0: no limit).
func openFile(ctx context.Context, path string, maxConns int) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(busyTimeout)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		db.SetMaxOpenConns(maxConns)
	}
	if err := connect(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// connect opens db's first connection. Connections opening a new file at
// once can fail with SQLITE_BUSY while one of them switches it to WAL mode,
// a step busy_timeout does not cover; such attempts are repeated until the
// busy timeout has passed.
func connect(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout * time.Millisecond)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := db.PingContext(ctx)
		var serr *sqlite.Error
		if err == nil || !errors.As(err, &serr) || serr.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
