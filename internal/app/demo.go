package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/llm"
)

// bootstrapDemo runs the first-run demo (demo: true): on an empty data
// directory it creates the zhouyi knowledge base and the local search
// pages. When the demo's knowledge base exists and kb.default_knowledge_bases
// names none, it becomes the default in cfg, which the knowledge bases are
// opened with afterwards.
func bootstrapDemo(ctx context.Context, cfg *config.Config, models *llm.Registry, log *slog.Logger) error {
	kbs, err := NewKB(*cfg, models)
	if err != nil {
		return err
	}
	res, err := demo.Bootstrap(ctx, kbs, demo.Options{DataDir: cfg.Server.DataDir, SearchDir: cfg.SearchLocalDir()})
	if cerr := kbs.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("demo: %w", cerr)
	}
	if err != nil {
		return err
	}
	if res.CreatedKB || res.Pages > 0 {
		log.Info("first run: demo created (demo: false turns this off)", "knowledge_base", res.KnowledgeBase, "search_pages", res.Pages, "search_dir", cfg.SearchLocalDir())
	}
	if res.KnowledgeBase != "" && len(cfg.KB.DefaultKnowledgeBases) == 0 {
		cfg.KB.DefaultKnowledgeBases = []string{res.KnowledgeBase}
	}
	return nil
}
