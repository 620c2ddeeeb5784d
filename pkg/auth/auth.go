// Package auth is mixchat's access control: API keys (bearer tokens stored
// as SHA-256 hashes, each bound to a user and a role), the authenticated
// caller carried in a request's context, knowledge-base visibility (public,
// or private to an owner and the users it is granted to), and per-key rate
// limits on requests and LLM tokens per minute. Keys and grants live in SQL
// tables (SQLite or PostgreSQL) next to the conversations.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// Role is what a key may do.
type Role string

const (
	// RoleUser reads and writes its own conversations, feedback and
	// long-term memory, and reads the knowledge bases visible to it.
	RoleUser Role = "user"
	// RoleAdmin may also manage knowledge bases, keys and configuration.
	RoleAdmin Role = "admin"
)

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleUser, RoleAdmin:
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q: allowed: admin, user", s)
}

var (
	// ErrUnauthorized is returned for a missing, unknown or revoked key.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound is returned when a key does not exist.
	ErrNotFound = errors.New("not found")
)

// TokenPrefix starts every API key, so that leaked keys are easy to find
// (secret scanners, logs).
const TokenPrefix = "mx-"

// NewToken returns a new API key: TokenPrefix and 32 random bytes in
// unpadded base64url, 256 bits of entropy.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// HashToken is how a token is stored and looked up: hex SHA-256.
//
// A fast unsalted hash is right here, unlike for passwords: a token is 256
// random bits, so nobody can guess it from its hash by brute force however
// fast the hash is, and a deterministic hash lets a request find its key
// with one indexed lookup. bcrypt or argon2 exist to slow down guessing of
// low-entropy passwords; for tokens they would only add tens of
// milliseconds of CPU to every request and, being salted, force a scan of
// every key.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// displayPrefix is the part of a token shown in listings to recognise it.
func displayPrefix(token string) string {
	if len(token) > len(TokenPrefix)+6 {
		return token[:len(TokenPrefix)+6]
	}
	return token
}

// Key is a stored API key (never the token itself).
type Key struct {
	ID     string `json:"id"`
	Prefix string `json:"prefix"` // the token's first characters, e.g. "mx-AbC123"
	UserID string `json:"user_id"`
	Role   Role   `json:"role"`
	Name   string `json:"name,omitempty"`
	// RequestsPerMinute and TokensPerMinute override the configured
	// limits for this key when > 0.
	RequestsPerMinute int   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int   `json:"tokens_per_minute,omitempty"`
	CreatedAt         int64 `json:"created_at"`           // Unix milliseconds
	RevokedAt         int64 `json:"revoked_at,omitempty"` // Unix milliseconds; 0 while valid
}

// Principal is the authenticated caller of a request.
type Principal struct {
	UserID string
	Role   Role
	KeyID  string
	// Limits of the key, 0 for the configured defaults.
	RequestsPerMinute int
	TokensPerMinute   int
}

// Admin reports whether p may manage knowledge bases, keys and config.
func (p Principal) Admin() bool { return p.Role == RoleAdmin }

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the request's caller; ok is false when the request
// was not authenticated (authentication switched off: the single local
// user, who may do everything).
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Meter counts the LLM tokens a request spends, for the tokens-per-minute
// limit, from two sources: the replies' usage as handlers report it
// (AddTokens), and every model call as it happens (Spend, called by the
// metered models the wiring installs: the prompt up front, then what was
// produced, also when the call was cut).
// The request is charged the larger of the two, so a reply reported by
// both is not counted twice. It is safe for concurrent use.
type Meter struct {
	n       atomic.Int64 // reported by handlers
	spent   atomic.Int64 // counted at the model calls
	charged atomic.Int64 // passed to charge already
	charge  func(int64)  // charges the limiter at once; nil: only at Settle
}

// Tokens returns the tokens counted so far.
func (m *Meter) Tokens() int64 { return max(m.n.Load(), m.spent.Load()) }

// spend counts n tokens of a model call and charges them at once.
func (m *Meter) spend(n int64) {
	if n <= 0 {
		return
	}
	m.spent.Add(n)
	if m.charge != nil {
		m.charged.Add(n)
		m.charge(n)
	}
}

// Settle returns the tokens counted but not charged yet and marks them
// charged: what to charge when the request ends.
func (m *Meter) Settle() int64 {
	for {
		c := m.charged.Load()
		d := m.Tokens() - c
		if d <= 0 {
			return 0
		}
		if m.charged.CompareAndSwap(c, c+d) {
			return d
		}
	}
}

type meterKey struct{}

// WithChargingMeter returns ctx carrying a new Meter that passes the
// tokens of model calls to charge as they are spent (the prompt's when a
// call starts), so that requests running at the same time see them; with
// charge nil the tokens are only counted.
func WithChargingMeter(ctx context.Context, charge func(tokens int64)) (context.Context, *Meter) {
	m := &Meter{charge: charge}
	return context.WithValue(ctx, meterKey{}, m), m
}

// Metered reports whether ctx carries a Meter: whether the tokens of a
// model call made with ctx are charged, so a caller counts them only then.
func Metered(ctx context.Context) bool {
	_, ok := ctx.Value(meterKey{}).(*Meter)
	return ok
}

// Spend charges n tokens of a model call to ctx's Meter at once, if it has
// one: the prompt's when the call starts, what was produced when it ends.
func Spend(ctx context.Context, n int64) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok {
		m.spend(n)
	}
}

// AddTokens counts n tokens on ctx's Meter, if it has one.
func AddTokens(ctx context.Context, n int) {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok && n > 0 {
		m.n.Add(int64(n))
	}
}

// BearerToken extracts the token of an "Authorization: Bearer ..." header
// value; "" when there is none.
func BearerToken(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// KBAccess is who may read a knowledge base. A knowledge base without a
// record is public: every authenticated user reads it. Only admins manage
// (create, upload to, delete) knowledge bases whatever their visibility.
type KBAccess struct {
	KB      string   `json:"knowledge_base_name"`
	Owner   string   `json:"owner"`
	Private bool     `json:"private"`
	Grants  []string `json:"grants"` // users who may read a private KB besides its owner
}

// CanRead reports whether p may read the knowledge base a describes.
func (a KBAccess) CanRead(p Principal) bool {
	if !a.Private || p.Admin() || p.UserID == a.Owner {
		return true
	}
	for _, u := range a.Grants {
		if u == p.UserID {
			return true
		}
	}
	return false
}
