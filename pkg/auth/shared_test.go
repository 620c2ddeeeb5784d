package auth_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// Two SharedLimiters on two stores opened on one database are two
// replicas: the limits hold for both together.

func TestSharedLimiterSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.db")
	runSharedLimiterTests(t, func(t *testing.T) *auth.Store {
		s, err := sqlite.OpenKeys(context.Background(), path)
		return opened(t, s, err)
	})
}

func TestSharedLimiterPostgres(t *testing.T) {
	dsn := postgresSchemaDSN(t)
	runSharedLimiterTests(t, func(t *testing.T) *auth.Store { return openPostgres(t, dsn) })
}

func runSharedLimiterTests(t *testing.T, open func(t *testing.T) *auth.Store) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	advance := func(d time.Duration) { now.Add(int64(d)) }
	a, b := auth.NewSharedLimiter(open(t)), auth.NewSharedLimiter(open(t))
	a.SetClock(clock)
	b.SetClock(clock)
	allow := func(l *auth.SharedLimiter, key string, rpm, tpm int) (bool, time.Duration) {
		t.Helper()
		ok, wait, err := l.Allow(ctx, key, rpm, tpm)
		if err != nil {
			t.Fatal(err)
		}
		return ok, wait
	}

	t.Run("requests", func(t *testing.T) {
		for i, l := range []*auth.SharedLimiter{a, b, a} {
			if ok, _ := allow(l, "r", 3, 0); !ok {
				t.Fatalf("request %d refused", i)
			}
		}
		if ok, wait := allow(b, "r", 3, 0); ok || wait != 20*time.Second {
			t.Fatalf("4th request, on the other replica: %v, wait %s; want refused, 20s", ok, wait)
		}
		if ok, _ := allow(a, "other", 3, 0); !ok {
			t.Fatal("another key is limited by r's use")
		}
		advance(20 * time.Second)
		if ok, _ := allow(a, "r", 3, 0); !ok {
			t.Fatal("refused after waiting Retry-After")
		}
		if ok, _ := allow(b, "r", 3, 0); ok {
			t.Fatal("the refill of 20 s let two requests through")
		}
	})
	t.Run("tokens go into debt on every replica", func(t *testing.T) {
		if ok, _ := allow(a, "t", 0, 600); !ok {
			t.Fatal("first request refused")
		}
		b.Charge("t", 0, 600, 1200) // 600 over budget: 1 minute and a bit
		ok, wait := allow(a, "t", 0, 600)
		if ok || wait < 60*time.Second || wait > 61*time.Second {
			t.Fatalf("after debt charged on the other replica: %v, wait %s; want refused, ~60s", ok, wait)
		}
		advance(wait)
		if ok, _ := allow(a, "t", 0, 600); !ok {
			t.Fatal("refused after paying the debt")
		}
	})
	t.Run("a full bucket forgives no charge", func(t *testing.T) {
		allow(a, "f", 0, 600)
		advance(10 * time.Minute) // the bucket is full again
		b.Charge("f", 0, 600, 1200)
		if ok, _ := allow(a, "f", 0, 600); ok {
			t.Fatal("a charge after an idle spell was absorbed by the refill")
		}
	})
	t.Run("unlimited", func(t *testing.T) {
		for range 100 {
			if ok, _ := allow(a, "u", 0, 0); !ok {
				t.Fatal("unlimited key refused")
			}
		}
	})
	t.Run("concurrent requests on both replicas", func(t *testing.T) {
		const limit, sent = 10, 60
		var passed atomic.Int32
		var wg sync.WaitGroup
		for i := range sent {
			l := a
			if i%2 == 1 {
				l = b
			}
			wg.Go(func() {
				ok, _, err := l.Allow(ctx, "c", limit, 0)
				if err != nil {
					t.Error(err)
				}
				if ok {
					passed.Add(1)
				}
			})
		}
		wg.Wait()
		if passed.Load() != limit {
			t.Errorf("%d of %d concurrent requests passed a limit of %d per minute", passed.Load(), sent, limit)
		}
	})
}
