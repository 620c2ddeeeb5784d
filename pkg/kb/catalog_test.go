package kb

import (
	"context"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/store/postgres"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// openCatalog opens the catalog cfg.Store names, as the program does:
// kb.db files under cfg.Dir, or the PostgreSQL registry at cfg.DSN.
func openCatalog(cfg Config) (Catalog, error) {
	if cfg.Store == KBStorePostgres {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return postgres.OpenKBCatalog(ctx, cfg.DSN)
	}
	return sqlite.NewKBCatalog(cfg.Dir), nil
}

// newWithStore is New with the catalog cfg.Store names.
func newWithStore(cfg Config, emb llm.Embedder, models llm.Models, opts ...Option) (*Service, error) {
	cat, err := openCatalog(cfg)
	if err != nil {
		return nil, err
	}
	s, err := New(cfg, cat, emb, models, opts...)
	if err != nil {
		cat.Close()
		return nil, err
	}
	return s, nil
}
