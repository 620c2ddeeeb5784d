// Package app wires mixchat from a configuration: the conversation store,
// the models, the memory, the three answerers, the mixer and the HTTP
// server. It is the one place that names concrete implementations, and the
// one constructor behind `mixchat serve`, the in-process `mixchat chat` and
// the benchmarks of mixchat-eval, so what is measured is what is served.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mixchat/mixchat/demo"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/rag"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/server"
)

// Options are what New takes besides the configuration. The zero value
// serves.
type Options struct {
	// Log receives the app's logs; nil discards them.
	Log *slog.Logger
	// Version is reported by /healthz and in traces.
	Version string
	// LLMHTTPClient, when set, makes every model endpoint's calls (a
	// benchmark with many connections to one upstream sizes its pool); nil
	// means a client of the app's own (newLLMTransport), whose idle
	// connections Close closes.
	LLMHTTPClient *http.Client
	// Answerers, when set, may replace or wrap mix_chat's answerers (keyed
	// by rag.LLM, rag.KB, rag.Search) before they are measured and handed
	// to the mixer. Only benchmarks set it; models is the app's registry.
	Answerers func(models *llm.Registry, answerers map[string]rag.Answerer)
}

// App is mixchat wired from a configuration. Close it when done.
type App struct {
	Config config.Config
	Log    *slog.Logger
	Models *llm.Registry
	Store  memory.Store
	Memory *memory.Manager
	KB     *kb.Service
	Server *server.Server

	version string
	llmHTTP *http.Client // makes the model endpoints' calls
	tracing *obs.Tracing
	vocab   *kbVocabulary
	// closers are closed in reverse order by Close.
	closers []func() error
}

// New wires the app from cfg (validated by the caller). On error what was
// opened is closed again.
func New(ctx context.Context, cfg config.Config, opts Options) (_ *App, err error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// A server refused for where it listens writes nothing first (the
	// demo's knowledge base, the first run's marker).
	if _, err := cfg.Auth.CheckListen(cfg.Server.Addr); err != nil {
		return nil, err
	}
	hc := opts.LLMHTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newLLMTransport()}
	}
	a := &App{Config: cfg, Log: log, Models: newModels(cfg.LLM, hc, offlineProfiles(cfg.KB.ProfilesDir)), version: opts.Version, llmHTTP: hc}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if opts.LLMHTTPClient == nil {
		a.closers = append(a.closers, func() error { hc.CloseIdleConnections(); return nil })
	}
	a.tracing, err = obs.SetupTracing(ctx, cfg.Telemetry, opts.Version, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	a.closers = append(a.closers, func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return a.tracing.Shutdown(sctx)
	})
	o := obs.New(obs.Options{Tracing: a.tracing.Provider, Prices: cfg.LLM.Prices, Log: log})
	o.InstrumentRegistry(a.Models)
	meterRegistry(a.Models) // tokens-per-minute: prompt up front, output even when cut

	// Stores.
	store, err := openStore(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open conversation store: %w", err)
	}
	a.Store = store
	a.closers = append(a.closers, store.Close)
	// The rewrite of follow-ups prefers the names the knowledge bases know;
	// they open below, so the vocabulary reads them once they are set, in
	// the background, and again whenever they change.
	vocab := newKBVocabulary(vocabularyCheck, vocabularySettle)
	a.vocab = vocab
	a.Memory, err = newMemory(cfg, store, a.Models, vocab, log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.Memory.Close)
	// First run: the demo knowledge base (made the default) and search pages; demo: false turns it off.
	// demo: false is remembered in the data directory, so a later plain
	// start does not make the demo either.
	if cfg.Demo {
		if err := bootstrapDemo(ctx, &cfg, a.Models, log); err != nil {
			return nil, err
		}
		a.Config = cfg
	} else if err := demo.Decline(cfg.Server.DataDir); err != nil {
		return nil, err
	}
	a.KB, err = NewKB(cfg, a.Models, kb.WithOnChange(vocab.changed))
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.KB.Close)
	if cfg.Demo {
		demoNamesProfile(ctx, a.KB, cfg.Server.DataDir, log)
	}
	vocab.set(a.KB)
	a.closers = append(a.closers, vocab.close) // before the knowledge bases close

	// Answerers and the mixer.
	answerer := chat.New(a.Models, chat.Options{PromptName: cfg.Chat.PromptName, Temperature: cfg.Chat.Temperature, MaxTokens: cfg.Chat.MaxTokens})
	scfg := cfg.Search
	scfg.Local.Dir = cfg.SearchLocalDir()
	if err := os.MkdirAll(scfg.Local.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create search.local.dir: %w", err)
	}
	searcher, err := search.New(scfg, search.Options{Models: a.Models, Client: o.SearchClient(nil)})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	answerers := map[string]rag.Answerer{rag.LLM: answerer, rag.KB: a.KB, rag.Search: searcher}
	if opts.Answerers != nil {
		opts.Answerers(a.Models, answerers)
	}
	for name, ans := range answerers {
		answerers[name] = o.Answerer(name, ans)
	}
	mixer, err := mix.New(cfg.Mix, mix.Deps{Models: a.Models, Answerers: answerers, Condenser: a.Memory})
	if err != nil {
		return nil, fmt.Errorf("mix_chat: %w", err)
	}

	// Access and the server.
	access, keys, err := newAccess(ctx, cfg, cfg.Auth, log)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		a.closers = append(a.closers, keys.Close)
	}
	a.Server = server.New(server.Options{
		Log: log, Version: opts.Version, Store: store, Models: a.Models, Chat: answerer, Memory: a.Memory,
		KB: a.KB, Search: searcher, Mixer: mixer, Access: access, Obs: o,
		MaxBodyBytes: cfg.Server.MaxBodyBytes, MaxQueryChars: cfg.Server.MaxQueryChars, HistoryLen: cfg.Memory.HistoryLen,
		PublicHosts: cfg.Server.PublicHosts, StreamWriteTimeout: cfg.Server.StreamWriteTimeout, Conns: cfg.Server.ConnLimits(),
	})
	return a, nil
}

// WaitVocabulary waits until the names the follow-up rewrite prefers
// (built in the background) reflect every knowledge-base change made
// before the call, or ctx is done. Serving never waits for them; a
// benchmark that fills knowledge bases and then asks follow-ups does.
func (a *App) WaitVocabulary(ctx context.Context) error { return a.vocab.wait(ctx) }

// llmIdlePerHost is how many idle connections to one model endpoint the
// app's own HTTP client keeps (net/http's default transport keeps 2).
const llmIdlePerHost = 128

// newLLMTransport is the HTTP transport of the model endpoints when
// Options.LLMHTTPClient is not set: net/http's default one, keeping up to
// llmIdlePerHost idle connections per endpoint instead of 2. With more
// calls in flight to one endpoint than it keeps (a mixed turn alone makes
// three at once), the default opened a connection, and with https did a
// TLS handshake, for most calls and closed it after.
func newLLMTransport() http.RoundTripper {
	d, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport // replaced by the program: its choice
	}
	t := d.Clone()
	t.MaxIdleConns = 2 * llmIdlePerHost
	t.MaxIdleConnsPerHost = llmIdlePerHost
	return t
}

// CloseIdleConnections closes the idle connections of the model endpoints'
// HTTP client (http.Client.CloseIdleConnections); calls in flight keep
// theirs.
func (a *App) CloseIdleConnections() { a.llmHTTP.CloseIdleConnections() }

// Close stops background work and closes the stores, in reverse order of
// opening.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Serve runs the HTTP server on ln until ctx is done, then shuts down
// gracefully: replies in flight get server.shutdown_timeout to finish; the
// rest are cut and stored as interrupted.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	m, name, _ := a.Models.Get("")
	extractive := llm.IsExtractive(m)
	a.Log.Info("mixchat listening", "addr", "http://"+ln.Addr().String(), "version", a.version,
		"data", a.Config.Server.DataDir, "store", a.Config.Store.Driver, "llm", name, "llm_extractive", extractive, "models", a.Models.Names())
	if extractive {
		a.Log.Info("no LLM endpoint configured: replies come from the offline extractive model, which quotes sentences of its context; set MIXCHAT_LLM_BASE_URL, MIXCHAT_LLM_API_KEY and MIXCHAT_LLM_MODEL for a generative model")
	}
	if a.tracing.Enabled() {
		a.Log.Info("tracing on", "otlp_endpoint", a.tracing.Endpoint)
	}
	hs := a.Server.NewHTTPServer()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(a.Server.Listener(ln)) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	a.Log.Info("shutting down", "grace", a.Config.Server.ShutdownTimeout)
	a.Server.Drain() // /readyz answers 503 from now on
	sctx, cancel := context.WithTimeout(context.Background(), a.Config.Server.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		a.Log.Warn("replies still running after the grace period: cutting them", "err", err)
	}
	a.Server.CutStreams()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if werr := a.Server.Wait(wctx); werr != nil {
		a.Log.Error("replies did not stop in time", "err", werr)
	}
	_ = hs.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	a.Log.Info("stopped")
	return nil
}

// NewLogger returns the process's logger; lines logged with a request's
// context carry its request id.
func NewLogger(cfg config.LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(obs.NewLogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(obs.NewLogHandler(slog.NewTextHandler(w, opts)))
}
