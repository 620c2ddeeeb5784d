// Package store is what the database engines' packages (pkg/store/sqlite,
// pkg/store/postgres) tell the rest of mixchat about their databases, in
// terms that name no driver: ErrUnavailable, for a database that cannot be
// reached. It imports nothing of ours.
package store

import "errors"

// ErrUnavailable is wrapped by the errors of a store whose database cannot
// be reached (refused or timed-out connections, a connection the server
// closed, a server shutting down or starting up). It says nothing of the
// request: the same request succeeds once the database is back, so the
// server answers 503 with Retry-After. The wrapped error, for the log, may
// name the database's host, port, user and name; clients must not see it.
var ErrUnavailable = errors.New("store unavailable")
