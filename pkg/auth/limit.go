package auth

import (
	"context"
	"math"
	"sync"
	"time"
)

// Limiter enforces per-key limits on requests and LLM tokens per minute,
// each as a token bucket holding one minute's allowance and refilling
// continuously. A request needs one request credit and a positive token
// balance; the tokens a reply used are charged afterwards (they are only
// known then), so the balance may go negative and later requests wait until
// it refills. Buckets live in memory: each process counts its own requests,
// so behind N replicas a key gets up to N times its limit; SharedLimiter
// counts them in the database the replicas share.
//
// Written here rather than with golang.org/x/time/rate because the token
// limit charges after the fact and must go into debt, which rate.Limiter's
// reservations do not model.
type Limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
	calls   int
}

type bucket struct {
	requests, tokens float64
	last             time.Time
}

// NewLimiter returns an empty Limiter.
func NewLimiter() *Limiter {
	return &Limiter{buckets: map[string]*bucket{}, now: time.Now}
}

// refill brings key's bucket up to now and returns it; a new key starts
// with a full minute's allowance.
func (l *Limiter) refill(key string, rpm, tpm int) *bucket {
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{requests: float64(rpm), tokens: float64(tpm), last: now}
		l.buckets[key] = b
	}
	dt := now.Sub(b.last).Minutes()
	if dt > 0 {
		b.requests = math.Min(float64(rpm), b.requests+dt*float64(rpm))
		b.tokens = math.Min(float64(tpm), b.tokens+dt*float64(tpm))
		b.last = now
	}
	l.calls++
	if l.calls%4096 == 0 {
		// Buckets idle for two minutes are full again: the same as absent.
		for k, o := range l.buckets {
			if now.Sub(o.last) > 2*time.Minute {
				delete(l.buckets, k)
			}
		}
	}
	return b
}

// Allow takes one request from key's allowance of rpm requests and tpm
// tokens per minute (0: unlimited). When the key is over a limit it returns
// false and how long to wait before the next request can pass. The error
// is always nil (SharedLimiter's may not be).
func (l *Limiter) Allow(_ context.Context, key string, rpm, tpm int) (bool, time.Duration, error) {
	if rpm <= 0 && tpm <= 0 {
		return true, 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, max(rpm, 0), max(tpm, 0))
	var wait time.Duration
	if rpm > 0 && b.requests < 1 {
		wait = max(wait, minutes((1-b.requests)/float64(rpm)))
	}
	if tpm > 0 && b.tokens < 1 {
		wait = max(wait, minutes((1-b.tokens)/float64(tpm)))
	}
	if wait > 0 {
		return false, wait, nil
	}
	if rpm > 0 {
		b.requests--
	}
	return true, 0, nil
}

// Charge counts tokens spent by key against its tpm allowance; rpm and tpm
// are the limits Allow was given.
func (l *Limiter) Charge(key string, rpm, tpm int, tokens int64) {
	if tpm <= 0 || tokens <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, max(rpm, 0), tpm)
	b.tokens -= float64(tokens)
}

func minutes(m float64) time.Duration {
	return time.Duration(math.Ceil(m * float64(time.Minute)))
}
