package lc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/server"
)

// demoServer is a mixchat server as `mixchat serve` builds it on a first
// run: the offline model, SQLite memory, the demo's zhouyi knowledge base
// (the default one) and the Ten Wings pages for the local search engine.
type demoServer struct {
	*server.Server
	KB      *kb.Service
	closers []func() error
}

func (s *demoServer) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

func newDemoServer() (_ *demoServer, err error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mixchat-lc-")
	if err != nil {
		return nil, err
	}
	s := &demoServer{closers: []func() error{func() error { return os.RemoveAll(dir) }}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	models := llm.NewRegistry("offline")
	models.Add("offline", llm.NewOffline(llm.OfflineOptions{}))
	store, err := memory.OpenSQLite(ctx, filepath.Join(dir, "mixchat.db"))
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, store.Close)
	mem, err := memory.NewManager(store, memory.DefaultConfig(), memory.Options{Model: llm.NewOffline(llm.OfflineOptions{}), ModelName: "offline"})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, mem.Close)

	kcfg := kb.DefaultConfig()
	kcfg.Dir, kcfg.EmbedModel = filepath.Join(dir, "kb"), "hash-512"
	kcfg.DefaultKnowledgeBases = []string{demo.KnowledgeBase}
	s.KB, err = kb.New(kcfg, retrieve.NewHashEmbedder(512), models)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.KB.Close)
	scfg := search.DefaultConfig()
	scfg.Local.Dir = filepath.Join(dir, "search")
	if _, err := demo.Bootstrap(ctx, s.KB, demo.Options{DataDir: dir, SearchDir: scfg.Local.Dir}); err != nil {
		return nil, err
	}
	searcher, err := search.New(scfg, search.Options{Models: models})
	if err != nil {
		return nil, err
	}
	answerer := chat.New(models, chat.Options{PromptName: "with_history"})
	mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{
		Models:    models,
		Answerers: map[string]mix.Answerer{mix.LLM: answerer, mix.KB: s.KB, mix.Search: searcher},
		Condenser: mem, Recaller: mem,
	})
	if err != nil {
		return nil, fmt.Errorf("mix: %w", err)
	}
	s.Server = server.New(server.Options{Store: store, Models: models, Chat: answerer, Memory: mem, KB: s.KB, Search: searcher, Mixer: mixer})
	return s, nil
}
