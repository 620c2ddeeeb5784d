package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/server"
)

// serveFlags are the flags every command that builds the app shares.
type serveFlags struct {
	addr, data, config string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "", "listen address HOST:PORT (default 127.0.0.1:7861; server.addr)")
	fs.StringVar(&f.data, "data", "", "data directory (default ./data; server.data_dir)")
	fs.StringVar(&f.config, "config", "", "YAML configuration file (see configs/mixchat.yaml)")
}

// load builds the validated configuration: defaults, file, environment,
// flags.
func (f *serveFlags) load() (Config, error) {
	cfg, err := LoadConfig(f.config, os.Environ())
	if err != nil {
		return cfg, err
	}
	if f.addr != "" {
		cfg.Server.Addr = f.addr
	}
	if f.data != "" {
		cfg.Server.DataDir = f.data
	}
	return cfg, cfg.Validate()
}

// newLogger returns the process's logger; lines logged with a request's
// context carry its request id.
func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(obs.NewLogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(obs.NewLogHandler(slog.NewTextHandler(w, opts)))
}

// app is mixchat wired from a configuration: the one place that names
// concrete implementations.
type app struct {
	cfg     Config
	log     *slog.Logger
	models  *llm.Registry
	store   memory.Store
	memory  *memory.Manager
	kb      *kb.Service
	tracing *obs.Tracing
	server  *server.Server
	// closers are closed in reverse order by Close.
	closers []func() error
}

// newModels registers the offline model and every configured endpoint.
func newModels(cfg LLMConfig) *llm.Registry {
	def := cfg.Default
	if def == "" {
		def = "offline"
		if cfg.BaseURL != "" {
			def = cfg.Model
		}
	}
	r := llm.NewRegistry(def)
	r.Add("offline", llm.NewOffline(llm.OfflineOptions{}))
	if cfg.BaseURL != "" {
		r.Add(cfg.Model, llm.NewClient(llm.ClientConfig{
			Name: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
			Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries, RetryBackoff: cfg.RetryBackoff,
		}))
	}
	for _, m := range cfg.Models {
		timeout := m.Timeout
		if timeout == 0 {
			timeout = cfg.Timeout
		}
		r.Add(m.Name, llm.NewClient(llm.ClientConfig{
			Name: m.Name, BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model,
			Timeout: timeout, MaxRetries: cfg.MaxRetries, RetryBackoff: cfg.RetryBackoff,
		}))
	}
	return r
}

func openStore(ctx context.Context, cfg Config) (memory.Store, error) {
	switch cfg.Store.Driver {
	case "postgres":
		return memory.OpenPostgres(ctx, cfg.Store.DSN)
	default:
		if err := os.MkdirAll(cfg.Server.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
		return memory.OpenSQLite(ctx, cfg.sqlitePath())
	}
}

// newMemory builds the conversation memory over store: memory.model (or the
// default model) writes summaries, extracts facts and rewrites follow-ups
// (the offline model makes these extractive); past messages are embedded
// with the configured embeddings endpoint when embed.dimensions says its
// size, else with the offline hashing embedder.
func newMemory(cfg Config, store memory.Store, models *llm.Registry, log *slog.Logger) (*memory.Manager, error) {
	m, name, err := models.Get(cfg.Memory.Model)
	if err != nil {
		return nil, fmt.Errorf("memory.model: %w", err)
	}
	opts := memory.Options{Model: m, ModelName: name, Tokens: llm.NewTokenizer(name), Log: log}
	if cfg.Embed.BaseURL != "" && cfg.Embed.Dimensions > 0 {
		opts.Embedder, opts.EmbedDim = newEmbedder(cfg), cfg.Embed.Dimensions
	}
	mgr, err := memory.NewManager(store, cfg.Memory, opts)
	if err != nil {
		return nil, fmt.Errorf("conversation memory: %w", err)
	}
	return mgr, nil
}

func newApp(ctx context.Context, cfg Config, log *slog.Logger) (_ *app, err error) {
	a := &app{cfg: cfg, log: log, models: newModels(cfg.LLM)}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	a.tracing, err = obs.SetupTracing(ctx, cfg.Telemetry, version, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	a.closers = append(a.closers, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return a.tracing.Shutdown(sctx)
	})
	o := obs.New(obs.Options{Tracing: a.tracing.Provider, Prices: cfg.LLM.Prices, Log: log})
	o.InstrumentRegistry(a.models)
	auth.MeterRegistry(a.models) // tokens-per-minute: prompt up front, output even when cut

	store, err := openStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open conversation store: %w", err)
	}
	a.store = store
	a.closers = append(a.closers, store.Close)

	a.memory, err = newMemory(cfg, store, a.models, log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.memory.Close)

	answerer := chat.New(a.models, chat.Options{PromptName: cfg.Chat.PromptName, Temperature: cfg.Chat.Temperature, MaxTokens: cfg.Chat.MaxTokens})

	scfg := cfg.Search
	scfg.Local.Dir = cfg.searchLocalDir()
	if err := os.MkdirAll(scfg.Local.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create search.local.dir: %w", err)
	}
	searcher, err := search.New(scfg, search.Options{Models: a.models, Client: o.SearchClient(nil)})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}

	a.kb, err = newKB(cfg, a.models)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.kb.Close)

	answerers := map[string]mix.Answerer{
		mix.LLM:    o.Answerer(mix.LLM, answerer),
		mix.KB:     o.Answerer(mix.KB, a.kb),
		mix.Search: o.Answerer(mix.Search, searcher),
	}
	mixer, err := mix.New(cfg.Mix, mix.Deps{Models: a.models, Answerers: answerers, Condenser: a.memory, Recaller: a.memory})
	if err != nil {
		return nil, fmt.Errorf("mix_chat: %w", err)
	}

	access, keys, err := newAccess(ctx, cfg, cfg.Auth, log)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		a.closers = append(a.closers, keys.Close)
	}

	a.server = server.New(server.Options{
		Log: log, Version: version, Store: store, Models: a.models, Chat: answerer, Memory: a.memory,
		KB: a.kb, Search: searcher, Mixer: mixer, Access: access, Obs: o,
		MaxBodyBytes: cfg.Server.MaxBodyBytes, HistoryLen: cfg.Memory.HistoryLen,
		PublicHosts: cfg.Server.PublicHosts,
	})
	return a, nil
}

// Close stops background work and closes the stores, in reverse order of
// opening.
func (a *app) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// newEmbedder returns the configured embeddings endpoint, or the offline
// hashed n-gram embedder when none is configured.
func newEmbedder(cfg Config) llm.Embedder {
	if cfg.Embed.BaseURL == "" {
		return retrieve.NewHashEmbedder(offlineEmbedDim)
	}
	return llm.NewClient(llm.ClientConfig{
		Name: cfg.Embed.Model, BaseURL: cfg.Embed.BaseURL, APIKey: cfg.Embed.APIKey,
		Model: cfg.Embed.Model, EmbedModel: cfg.Embed.Model, EmbedBatch: cfg.Embed.BatchSize,
		Timeout: cfg.LLM.Timeout, MaxRetries: cfg.LLM.MaxRetries, RetryBackoff: cfg.LLM.RetryBackoff,
	})
}

// newKB opens the knowledge bases.
func newKB(cfg Config, models *llm.Registry) (*kb.Service, error) {
	svc, err := kb.New(cfg.kbConfig(), newEmbedder(cfg), models)
	if err != nil {
		return nil, fmt.Errorf("knowledge bases: %w", err)
	}
	return svc, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := f.load()
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)
	a, err := newApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return a.serve(ctx, ln)
}

// serve runs the HTTP server on ln until ctx is done, then shuts down
// gracefully: replies in flight get server.shutdown_timeout to finish; the
// rest are cut and stored as interrupted.
func (a *app) serve(ctx context.Context, ln net.Listener) error {
	m, name, _ := a.models.Get("")
	extractive := llm.IsExtractive(m)
	a.log.Info("mixchat listening", "addr", "http://"+ln.Addr().String(), "version", version,
		"data", a.cfg.Server.DataDir, "store", a.cfg.Store.Driver, "llm", name, "llm_extractive", extractive, "models", a.models.Names())
	if extractive {
		a.log.Info("no LLM endpoint configured: replies come from the offline extractive model, which quotes sentences of its context; set MIXCHAT_LLM_BASE_URL, MIXCHAT_LLM_API_KEY and MIXCHAT_LLM_MODEL for a generative model")
	}
	if a.tracing.Enabled() {
		a.log.Info("tracing on", "otlp_endpoint", a.tracing.Endpoint)
	}
	hs := &http.Server{Handler: a.server.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "grace", a.cfg.Server.ShutdownTimeout)
	a.server.Drain() // /readyz answers 503 from now on
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.Server.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		a.log.Warn("replies still running after the grace period: cutting them", "err", err)
	}
	a.server.CutStreams()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if werr := a.server.Wait(wctx); werr != nil {
		a.log.Error("replies did not stop in time", "err", werr)
	}
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	a.log.Info("stopped")
	return nil
}
