package auth_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/store/postgres"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// BenchmarkAuthenticate measures the per-request cost of looking a key up
// (one indexed query on the SHA-256 of the token).
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			var s *auth.Store
			var err error
			if backend == "sqlite" {
				s, err = sqlite.OpenKeys(ctx, b.TempDir()+"/auth.db")
			} else {
				dsn := postgresSchemaDSN(b)
				s, err = postgres.OpenKeys(ctx, dsn)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for range 100 {
				if _, _, err := s.CreateKey(ctx, auth.KeySpec{UserID: "other", Role: auth.RoleUser}); err != nil {
					b.Fatal(err)
				}
			}
			tok, _, err := s.CreateKey(ctx, auth.KeySpec{UserID: "u", Role: auth.RoleUser})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Authenticate(ctx, tok); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkSharedLimiterAllow measures what counting a request in the
// database adds to it (one upsert of the key's bucket), one key for all
// goroutines (its row lock orders them) and a key each.
func BenchmarkSharedLimiterAllow(b *testing.B) {
	ctx := context.Background()
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, keys := range []string{"one key", "a key each"} {
			b.Run(backend+"/"+keys, func(b *testing.B) {
				var s *auth.Store
				var err error
				if backend == "sqlite" {
					s, err = sqlite.OpenKeys(ctx, b.TempDir()+"/auth.db")
				} else {
					s, err = postgres.OpenKeys(ctx, postgresSchemaDSN(b))
				}
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				l := auth.NewSharedLimiter(s)
				var n atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					key := "k"
					if keys != "one key" {
						key = fmt.Sprint("k", n.Add(1))
					}
					for pb.Next() {
						if _, _, err := l.Allow(ctx, key, 1<<30, 0); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
