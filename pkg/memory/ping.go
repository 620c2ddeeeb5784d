package memory

import (
	"context"
	"fmt"
)

// Ping reports whether the database answers a query. It uses a read
// connection, so a long write transaction does not make it wait.
func (s *SQLite) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping sqlite: %w", err)
	}
	return nil
}

// Ping reports whether PostgreSQL answers on a pooled connection.
func (p *Postgres) Ping(ctx context.Context) error {
	if err := p.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}
