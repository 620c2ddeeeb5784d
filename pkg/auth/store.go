package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/store/sqlrows"
)

// Store keeps API keys and knowledge-base access records in SQL tables of
// their own (auth_*), in the same SQLite file or PostgreSQL database as the
// conversations or another one. One implementation on database/sql serves
// both engines: queries are written with "?" placeholders and portable SQL,
// and the engine's package (pkg/store/sqlite, pkg/store/postgres) opens
// the database and says how its dialect differs.
type Store struct {
	db  *sql.DB
	d   Dialect
	now func() time.Time
}

// Dialect is what differs between the SQL engines Store runs on.
type Dialect struct {
	// Rebind turns the store's "?" placeholders into the engine's; nil
	// keeps them.
	Rebind func(query string) string
	// Lock is run first in the migration transaction so that processes
	// starting together migrate one after the other ("" when the
	// transaction is exclusive already, as SQLite's BEGIN IMMEDIATE is).
	Lock string
}

// NewStore migrates the auth tables in db and returns the store over it;
// Close closes db.
func NewStore(ctx context.Context, db *sql.DB, d Dialect) (*Store, error) {
	s := &Store{db: db, d: d, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		return nil, fmt.Errorf("open auth store: migrate: %w", err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrations are the auth schema, one entry per version, applied in order
// and recorded in auth_migrations; existing entries are never edited. The
// statements are valid in both SQLite and PostgreSQL. (pkg/memory's runner
// is not exported, and these tables have their own life cycle.)
var migrations = [][]string{
	1: {
		`CREATE TABLE auth_keys (
			id                  TEXT    NOT NULL PRIMARY KEY,
			hash                TEXT    NOT NULL UNIQUE,
			prefix              TEXT    NOT NULL,
			user_id             TEXT    NOT NULL,
			role                TEXT    NOT NULL,
			name                TEXT    NOT NULL DEFAULT '',
			requests_per_minute INTEGER NOT NULL DEFAULT 0,
			tokens_per_minute   INTEGER NOT NULL DEFAULT 0,
			created_at          BIGINT  NOT NULL,
			revoked_at          BIGINT  NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX auth_keys_user ON auth_keys (user_id)`,
		`CREATE TABLE auth_kbs (
			kb      TEXT    NOT NULL PRIMARY KEY,
			owner   TEXT    NOT NULL DEFAULT '',
			private INTEGER NOT NULL DEFAULT 0
		)`,
		`CREATE TABLE auth_kb_grants (
			kb      TEXT NOT NULL,
			user_id TEXT NOT NULL,
			PRIMARY KEY (kb, user_id)
		)`,
	},
}

func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if s.d.Lock != "" {
			if _, err := tx.ExecContext(ctx, s.d.Lock); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS auth_migrations (
			version    BIGINT NOT NULL PRIMARY KEY,
			applied_at BIGINT NOT NULL
		)`); err != nil {
			return err
		}
		var have int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM auth_migrations`).Scan(&have); err != nil {
			return err
		}
		for v := int(have) + 1; v < len(migrations); v++ {
			for _, stmt := range migrations[v] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("version %d: %w", v, err)
				}
			}
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO auth_migrations (version, applied_at) VALUES (?, ?)`), v, s.now().UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// q is query in the engine's placeholders.
func (s *Store) q(query string) string {
	if s.d.Rebind == nil {
		return query
	}
	return s.d.Rebind(query)
}

// KeySpec describes a key to create.
type KeySpec struct {
	UserID            string
	Role              Role
	Name              string
	RequestsPerMinute int
	TokensPerMinute   int
}

// CreateKey makes a new key for spec.UserID and returns its token, which is
// shown once and never stored, and its record.
func (s *Store) CreateKey(ctx context.Context, spec KeySpec) (string, Key, error) {
	if strings.TrimSpace(spec.UserID) == "" || len(spec.UserID) > 128 {
		return "", Key{}, errors.New("create key: user id must be 1 to 128 bytes")
	}
	if _, err := ParseRole(string(spec.Role)); err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	if spec.RequestsPerMinute < 0 || spec.TokensPerMinute < 0 {
		return "", Key{}, errors.New("create key: limits must not be negative")
	}
	tok, err := NewToken()
	if err != nil {
		return "", Key{}, err
	}
	id, err := NewToken()
	if err != nil {
		return "", Key{}, err
	}
	k := Key{
		ID: "key_" + id[len(TokenPrefix):len(TokenPrefix)+12], Prefix: displayPrefix(tok),
		UserID: spec.UserID, Role: spec.Role, Name: spec.Name,
		RequestsPerMinute: spec.RequestsPerMinute, TokensPerMinute: spec.TokensPerMinute,
		CreatedAt: s.now().UnixMilli(),
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO auth_keys
		(id, hash, prefix, user_id, role, name, requests_per_minute, tokens_per_minute, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		k.ID, HashToken(tok), k.Prefix, k.UserID, string(k.Role), k.Name, k.RequestsPerMinute, k.TokensPerMinute, k.CreatedAt)
	if err != nil {
		return "", Key{}, fmt.Errorf("create key: %w", err)
	}
	return tok, k, nil
}

const keyColumns = `id, prefix, user_id, role, name, requests_per_minute, tokens_per_minute, created_at, revoked_at`

func scanKey(sc interface{ Scan(...any) error }) (Key, error) {
	var k Key
	var role string
	err := sc.Scan(&k.ID, &k.Prefix, &k.UserID, &role, &k.Name, &k.RequestsPerMinute, &k.TokensPerMinute, &k.CreatedAt, &k.RevokedAt)
	k.Role = Role(role)
	return k, err
}

// Authenticate returns the caller a bearer token stands for, or
// ErrUnauthorized for a token that is malformed, unknown or revoked.
func (s *Store) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 128 {
		return Principal{}, ErrUnauthorized
	}
	k, err := scanKey(s.db.QueryRowContext(ctx, s.q(`SELECT `+keyColumns+` FROM auth_keys WHERE hash = ?`), HashToken(token)))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	if k.RevokedAt != 0 {
		return Principal{}, ErrUnauthorized
	}
	return Principal{UserID: k.UserID, Role: k.Role, KeyID: k.ID,
		RequestsPerMinute: k.RequestsPerMinute, TokensPerMinute: k.TokensPerMinute}, nil
}

// Keys lists keys, revoked ones included, oldest first; userID "" lists
// every user's.
func (s *Store) Keys(ctx context.Context, userID string) ([]Key, error) {
	query, args := `SELECT `+keyColumns+` FROM auth_keys ORDER BY created_at, id`, []any(nil)
	if userID != "" {
		query, args = `SELECT `+keyColumns+` FROM auth_keys WHERE user_id = ? ORDER BY created_at, id`, []any{userID}
	}
	out, err := sqlrows.Collect(ctx, s.db, s.q(query), args, scanKey)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return out, nil
}

// RevokeKey revokes a key by id or by its token's displayed prefix; the
// key stops working at once on every process sharing the database.
// ErrNotFound if no key matches; revoking twice is not an error.
func (s *Store) RevokeKey(ctx context.Context, idOrPrefix string) (Key, error) {
	var k Key
	err := s.tx(ctx, func(tx *sql.Tx) error {
		found, err := sqlrows.Collect(ctx, tx, s.q(`SELECT `+keyColumns+` FROM auth_keys WHERE id = ? OR prefix = ?`), []any{idOrPrefix, idOrPrefix}, scanKey)
		if err != nil {
			return err
		}
		switch len(found) {
		case 0:
			return fmt.Errorf("key %s: %w", idOrPrefix, ErrNotFound)
		case 1:
		default:
			return fmt.Errorf("key %s: %d keys match; give the key id", idOrPrefix, len(found))
		}
		k = found[0]
		if k.RevokedAt != 0 {
			return nil
		}
		k.RevokedAt = s.now().UnixMilli()
		_, err = tx.ExecContext(ctx, s.q(`UPDATE auth_keys SET revoked_at = ? WHERE id = ?`), k.RevokedAt, k.ID)
		return err
	})
	if err != nil {
		return Key{}, fmt.Errorf("revoke key: %w", err)
	}
	return k, nil
}

// KBAccess returns who may read the knowledge base kb; a KB without a
// record is public.
func (s *Store) KBAccess(ctx context.Context, kb string) (KBAccess, error) {
	a := KBAccess{KB: kb, Grants: []string{}}
	var private int
	err := s.db.QueryRowContext(ctx, s.q(`SELECT owner, private FROM auth_kbs WHERE kb = ?`), kb).Scan(&a.Owner, &private)
	if errors.Is(err, sql.ErrNoRows) {
		return a, nil
	}
	if err != nil {
		return a, fmt.Errorf("kb access %s: %w", kb, err)
	}
	a.Private = private != 0
	grants, err := sqlrows.Collect(ctx, s.db, s.q(`SELECT user_id FROM auth_kb_grants WHERE kb = ? ORDER BY user_id`), []any{kb}, sqlrows.String)
	if err != nil {
		return a, fmt.Errorf("kb access %s: %w", kb, err)
	}
	if grants != nil {
		a.Grants = grants
	}
	return a, nil
}

// SetKBAccess replaces the access record of a.KB, grants included.
func (s *Store) SetKBAccess(ctx context.Context, a KBAccess) error {
	if a.KB == "" {
		return errors.New("set kb access: empty knowledge base name")
	}
	private := 0
	if a.Private {
		private = 1
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO auth_kbs (kb, owner, private) VALUES (?, ?, ?)
			ON CONFLICT (kb) DO UPDATE SET owner = excluded.owner, private = excluded.private`), a.KB, a.Owner, private); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM auth_kb_grants WHERE kb = ?`), a.KB); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, u := range a.Grants {
			if u == "" || seen[u] {
				continue
			}
			seen[u] = true
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO auth_kb_grants (kb, user_id) VALUES (?, ?)`), a.KB, u); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set kb access %s: %w", a.KB, err)
	}
	return nil
}

// DeleteKBAccess forgets kb's access record (the KB becomes public).
func (s *Store) DeleteKBAccess(ctx context.Context, kb string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM auth_kb_grants WHERE kb = ?`), kb); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM auth_kbs WHERE kb = ?`), kb)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete kb access %s: %w", kb, err)
	}
	return nil
}
