package auth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// SharedLimiter enforces the limits Limiter enforces — per key, requests
// and LLM tokens per minute, each a token bucket holding one minute's
// allowance and refilling continuously, tokens charged after the fact and
// allowed into debt — once for every process sharing the Store's database
// (replicas on one PostgreSQL): each key's bucket is a row of auth_limits,
// and every request takes its credit in one atomic statement there, so N
// replicas let through what one process would, not N times as much.
//
// Accuracy: requests are counted exactly across processes (one row update
// per request; the row lock orders concurrent ones). Tokens are as exact as
// in one process: a model call's prompt is charged when the call starts and
// its output when it ends, so requests admitted while others are running
// do not see the output those will produce. Time is each process's clock
// in milliseconds; a bucket never refills for time another process already
// counted, so clocks that differ by s seconds cost at most s/60 of a
// minute's allowance when the key moves to the slower one.
//
// The process keeps in front of the database only what cannot be wrong: a
// key refused until a given time is refused again without a round trip
// until then (its bucket can only have been drawn further meanwhile). A
// charge that cannot be written (the database out of reach) is kept and
// added to the key's next charge.
type SharedLimiter struct {
	s   *Store
	now func() time.Time

	mu     sync.Mutex
	denied map[string]time.Time // refused until
	owed   map[string]int64     // tokens charged but not written yet
}

// NewSharedLimiter returns a SharedLimiter over s's database.
func NewSharedLimiter(s *Store) *SharedLimiter {
	return &SharedLimiter{s: s, now: s.now, denied: map[string]time.Time{}, owed: map[string]int64{}}
}

// The bucket statements, portable between SQLite and PostgreSQL. A bucket
// row holds the balances at updated_at (Unix milliseconds) and the limits
// it was last used with. {requests} and {tokens} stand for the balances
// refilled to the caller's time (refill), {ok} for both allowing a request.
const (
	// takeSQL refills the key's bucket to the caller's time and takes one
	// request when both balances allow it (ok = 1), else leaves them (ok =
	// 0). A key without a row starts with a full minute's allowance, this
	// request taken.
	takeSQL = `INSERT INTO auth_limits (key_id, requests, tokens, rpm, tpm, updated_at, ok) VALUES (?, ?, ?, ?, ?, ?, 1)
		ON CONFLICT (key_id) DO UPDATE SET
			requests = {requests} - CASE WHEN {ok} AND excluded.rpm > 0 THEN 1 ELSE 0 END,
			tokens = {tokens},
			rpm = excluded.rpm,
			tpm = excluded.tpm,
			updated_at = CASE WHEN excluded.updated_at > auth_limits.updated_at THEN excluded.updated_at ELSE auth_limits.updated_at END,
			ok = CASE WHEN {ok} THEN 1 ELSE 0 END
		RETURNING requests, tokens, ok`
	// chargeSQL refills the key's bucket to the caller's time and takes
	// tokens from it, into debt if need be.
	chargeSQL = `UPDATE auth_limits SET
			requests = {requests},
			tokens = {tokens} - c.n,
			updated_at = CASE WHEN c.now > auth_limits.updated_at THEN c.now ELSE auth_limits.updated_at END
		FROM (SELECT CAST(? AS BIGINT) AS now, CAST(? AS DOUBLE PRECISION) AS n) AS c
		WHERE key_id = ?`
)

// refill is the SQL of the balance column refilled at rate per minute up to
// the time now and capped at rate (a minute's allowance). Time before the
// row's updated_at adds nothing: another process, whose clock is ahead,
// counted it already.
func refill(balance, rate, now string) string {
	minutes := "((CASE WHEN " + now + " > auth_limits.updated_at THEN " + now + " - auth_limits.updated_at ELSE 0 END) / 60000.0)"
	v := "auth_limits." + balance + " + " + minutes + " * " + rate
	return "(CASE WHEN " + v + " > " + rate + " THEN " + rate + " ELSE " + v + " END)"
}

// takeQuery and chargeQuery are takeSQL and chargeSQL written out.
var (
	takeQuery = func() string {
		req := refill("requests", "excluded.rpm", "excluded.updated_at")
		tok := refill("tokens", "excluded.tpm", "excluded.updated_at")
		ok := "((excluded.rpm <= 0 OR " + req + " >= 1) AND (excluded.tpm <= 0 OR " + tok + " >= 1))"
		return strings.NewReplacer("{requests}", req, "{tokens}", tok, "{ok}", ok).Replace(takeSQL)
	}()
	chargeQuery = strings.NewReplacer(
		"{requests}", refill("requests", "auth_limits.rpm", "c.now"),
		"{tokens}", refill("tokens", "auth_limits.tpm", "c.now"),
	).Replace(chargeSQL)
)

// Allow takes one request from key's allowance of rpm requests and tpm
// tokens per minute (0: unlimited), counted in the database. When the key
// is over a limit it returns false and how long to wait before the next
// request can pass. An error (the database out of reach) decides nothing.
func (l *SharedLimiter) Allow(ctx context.Context, key string, rpm, tpm int) (bool, time.Duration, error) {
	if rpm <= 0 && tpm <= 0 {
		return true, 0, nil
	}
	rpm, tpm = max(rpm, 0), max(tpm, 0)
	now := l.now()
	l.mu.Lock()
	until, refused := l.denied[key]
	if refused && now.Before(until) {
		l.mu.Unlock()
		return false, until.Sub(now), nil
	}
	delete(l.denied, key)
	owed := l.owed[key]
	delete(l.owed, key)
	l.mu.Unlock()
	if owed > 0 {
		l.Charge(key, rpm, tpm, owed)
	}
	start := float64(rpm)
	if rpm > 0 {
		start--
	}
	var requests, tokens float64
	var ok int
	err := l.s.db.QueryRowContext(ctx, l.s.q(takeQuery), key, start, float64(tpm), rpm, tpm, now.UnixMilli()).Scan(&requests, &tokens, &ok)
	if err != nil {
		return false, 0, fmt.Errorf("rate limit: %w", err)
	}
	if ok == 1 {
		return true, 0, nil
	}
	var wait time.Duration
	if rpm > 0 && requests < 1 {
		wait = max(wait, minutes((1-requests)/float64(rpm)))
	}
	if tpm > 0 && tokens < 1 {
		wait = max(wait, minutes((1-tokens)/float64(tpm)))
	}
	wait = max(wait, time.Millisecond)
	l.mu.Lock()
	l.denied[key] = now.Add(wait)
	if len(l.denied) > 4096 {
		for k, t := range l.denied {
			if !now.Before(t) {
				delete(l.denied, k)
			}
		}
	}
	l.mu.Unlock()
	return false, wait, nil
}

// chargeTimeout bounds the write of a charge, which runs on a model call's
// path without its context.
const chargeTimeout = 5 * time.Second

// Charge counts tokens spent by key against its allowance in the
// database; rpm and tpm are the limits Allow was given. A charge that
// cannot be written is added to the key's next one.
func (l *SharedLimiter) Charge(key string, rpm, tpm int, tokens int64) {
	if tpm <= 0 || tokens <= 0 {
		return
	}
	l.mu.Lock()
	tokens += l.owed[key]
	delete(l.owed, key)
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), chargeTimeout)
	defer cancel()
	if _, err := l.s.db.ExecContext(ctx, l.s.q(chargeQuery), l.now().UnixMilli(), float64(tokens), key); err != nil {
		l.mu.Lock()
		l.owed[key] += tokens
		l.mu.Unlock()
	}
}
