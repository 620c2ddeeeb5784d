package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/server"
)

// newAccess builds the server's access settings from the auth section ac
// (config.Config.Auth) and checks that the listen address cfg.Server.Addr fits
// them: authentication off on a non-loopback address fails unless
// auth.allow_anonymous_remote says so, and then logs a warning. With
// authentication on it opens the key store in the conversation store's
// database, where the rate limits are counted too when it is PostgreSQL
// (shared by replicas); close the returned Closer (nil when none) on exit.
func newAccess(ctx context.Context, cfg config.Config, ac auth.Config, log *slog.Logger) (server.Access, io.Closer, error) {
	access := server.Access{RequestsPerMinute: ac.RequestsPerMinute, TokensPerMinute: ac.TokensPerMinute, CORS: ac.CORS}
	warning, err := ac.CheckListen(cfg.Server.Addr)
	if err != nil {
		return access, nil, err
	}
	if warning != "" {
		log.Warn(warning)
	}
	if !ac.Enabled {
		return access, nil, nil
	}
	keys, err := OpenKeyStore(ctx, cfg)
	if err != nil {
		return access, nil, fmt.Errorf("open key store: %w", err)
	}
	access.Keys = keys
	if cfg.Store.Driver == "postgres" {
		// Replicas share the database: each key's limits are counted
		// there, once for all of them.
		access.Limiter = auth.NewSharedLimiter(keys)
	}
	log.Info("authentication on: requests need an API key (mixchat keys create)",
		"requests_per_minute", ac.RequestsPerMinute, "tokens_per_minute", ac.TokensPerMinute)
	return access, keys, nil
}
