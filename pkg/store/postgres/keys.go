package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mixchat/mixchat/pkg/auth"
)

// keysLockKey is the advisory lock under which processes starting together
// migrate the auth tables one after the other ("mixauth").
const keysLockKey int64 = 0x6d69786175746800

// OpenKeys connects to the PostgreSQL database at dsn and migrates the auth
// tables: the API keys and knowledge-base access records.
func OpenKeys(ctx context.Context, dsn string) (*auth.Store, error) {
	db, _, err := open(ctx, dsn, 0)
	if err != nil {
		return nil, fmt.Errorf("open auth store: %w", err)
	}
	s, err := auth.NewStore(ctx, db, auth.Dialect{
		Rebind: Rebind,
		Lock:   `SELECT pg_advisory_xact_lock(` + strconv.FormatInt(keysLockKey, 10) + `)`,
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}
