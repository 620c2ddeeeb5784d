package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/mix"
)

// bootstrapDemo runs the first-run demo (demo: true): on an empty data
// directory it creates the zhouyi knowledge base and the local search
// pages. When the demo's knowledge base exists and kb.default_knowledge_bases
// names none, it becomes the default in cfg, which the knowledge bases are
// opened with afterwards. Once the demo's marker exists, later starts open
// no knowledge-base service here: they only ask the catalog whether the
// demo knowledge base is still there, and only when it would become the
// default.
func bootstrapDemo(ctx context.Context, cfg *config.Config, models *llm.Registry, log *slog.Logger) error {
	made, done, err := demo.Marker(cfg.Server.DataDir)
	if err != nil {
		return err
	}
	if done {
		if made == "" || len(cfg.KB.DefaultKnowledgeBases) > 0 {
			return demoPersona(cfg)
		}
		ok, err := kbExists(ctx, *cfg, made)
		if err != nil {
			return err
		}
		if ok {
			cfg.KB.DefaultKnowledgeBases = []string{made}
		}
		return demoPersona(cfg)
	}
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
	return demoPersona(cfg)
}

// demoPersona applies the demo knowledge base's persona when it is a
// default knowledge base, unless mix.persona was changed from the neutral
// default. (The questions the web app suggests come from the profile the
// default knowledge base names.)
func demoPersona(cfg *config.Config) error {
	if !slices.Contains(cfg.KB.DefaultKnowledgeBases, demo.KnowledgeBase) {
		return nil
	}
	p, err := demo.KBProfile()
	if err != nil {
		return err
	}
	if cfg.Mix.Persona == mix.DefaultPersona && p.Persona != "" {
		cfg.Mix.Persona = p.Persona
	}
	return nil
}

// kbExists reports whether the knowledge base name exists, asking only the
// knowledge-base catalog.
func kbExists(ctx context.Context, cfg config.Config, name string) (bool, error) {
	cat, err := OpenKBCatalog(cfg.KBConfig())
	if err != nil {
		return false, fmt.Errorf("knowledge bases: %w", err)
	}
	ok, err := cat.Exists(ctx, name)
	if cerr := cat.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("demo: knowledge base %s: %w", name, err)
	}
	return ok, nil
}

// demoNamesProfile makes the demo's knowledge base, made by an earlier
// version before knowledge bases named profiles, name the demo's profile,
// as a new one does. A base that names one already (or none on purpose,
// after update_info) is left alone: only a base that never recorded a
// profile setting is changed, once. Failures are logged: the base works
// without its profile, with the general reading of structure.
func demoNamesProfile(ctx context.Context, kbs *kb.Service, dataDir string, log *slog.Logger) {
	made, done, err := demo.Marker(dataDir)
	if err != nil || !done || made == "" {
		return
	}
	if ok, err := kbs.Exists(ctx, made); err != nil || !ok {
		return
	}
	prof, err := demo.StructureProfile()
	if err != nil {
		return
	}
	if err := kbs.AdoptProfile(ctx, made, prof.Name); err != nil {
		log.Warn("demo: the knowledge base could not name its profile", "knowledge_base", made, "profile", prof.Name, "err", err)
	}
}
