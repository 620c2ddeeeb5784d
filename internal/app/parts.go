package app

import (
	"context"
	"fmt"
	"github.com/mixchat/mixchat/demo"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/docstruct"
	"github.com/mixchat/mixchat/pkg/extractive"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/retrieve"
	"github.com/mixchat/mixchat/pkg/store/postgres"
	"github.com/mixchat/mixchat/pkg/store/sqlite"
)

// The parts of the app that commands also open on their own: the models
// (`mixchat kb`), the knowledge bases (`mixchat kb`, `mixchat-eval cmrc
// --threshold`) and the key store (`mixchat keys`).

// NewModels registers the offline model and every configured endpoint; hc
// (nil: a client of their own) makes the endpoints' calls.
func NewModels(cfg config.LLMConfig) *llm.Registry {
	return newModels(cfg, nil, offlineProfiles(""))
}

// newModels is NewModels with the HTTP client of the model endpoints and
// the profiles the offline model reads parts named by.
func newModels(cfg config.LLMConfig, hc *http.Client, profiles []*docstruct.Profile) *llm.Registry {
	def := cfg.Default
	if def == "" {
		def = "offline"
		if cfg.BaseURL != "" {
			def = cfg.Model
		}
	}
	r := llm.NewRegistry(def)
	r.Add("offline", extractive.New(extractive.Options{Profiles: profiles}))
	if cfg.BaseURL != "" {
		r.Add(cfg.Model, llm.NewClient(llm.ClientConfig{
			Name: cfg.Model, BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model,
			Timeout: cfg.Timeout, MaxRetries: cfg.MaxRetries, RetryBackoff: cfg.RetryBackoff, HTTPClient: hc,
		}))
	}
	for _, m := range cfg.Models {
		timeout := m.Timeout
		if timeout == 0 {
			timeout = cfg.Timeout
		}
		r.Add(m.Name, llm.NewClient(llm.ClientConfig{
			Name: m.Name, BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model,
			Timeout: timeout, MaxRetries: cfg.MaxRetries, RetryBackoff: cfg.RetryBackoff, HTTPClient: hc,
		}))
	}
	return r
}

// openStore opens the conversation store store.driver names.
func openStore(ctx context.Context, cfg config.Config) (memory.Store, error) {
	switch cfg.Store.Driver {
	case "postgres":
		return postgres.OpenConversations(ctx, cfg.Store.DSN)
	default:
		if err := os.MkdirAll(cfg.Server.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
		return sqlite.OpenConversations(ctx, cfg.SQLitePath())
	}
}

// OpenKeyStore opens the API key store in the conversation store's
// database: the same PostgreSQL database, or the same SQLite file.
func OpenKeyStore(ctx context.Context, cfg config.Config) (*auth.Store, error) {
	if cfg.Store.Driver == "postgres" {
		return postgres.OpenKeys(ctx, cfg.Store.DSN)
	}
	if err := os.MkdirAll(cfg.Server.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	return sqlite.OpenKeys(ctx, cfg.SQLitePath())
}

// newMemory builds the conversation memory over store: memory.model (or the
// default model) writes summaries, extracts facts and rewrites follow-ups
// (memoryParts); past messages are embedded with the configured embeddings
// endpoint when embed.dimensions says its size, else with the offline
// hashing embedder. vocab names what the knowledge bases know, for the
// offline rewrite.
func newMemory(cfg config.Config, store memory.Store, models *llm.Registry, vocab extractive.Vocabulary, log *slog.Logger) (*memory.Manager, error) {
	m, name, err := models.Get(cfg.Memory.Model)
	if err != nil {
		return nil, fmt.Errorf("memory.model: %w", err)
	}
	tokens := llm.NewTokenizer(name)
	parts := memoryParts(m, name, tokens, vocab)
	opts := memory.Options{Rewriter: parts.rewriter, Summarizer: parts.summarizer, Extractor: parts.extractor, Tokens: tokens, Log: log}
	if cfg.Embed.BaseURL != "" && cfg.Embed.Dimensions > 0 {
		opts.Embedder, opts.EmbedDim = NewEmbedder(cfg), cfg.Embed.Dimensions
	}
	mgr, err := memory.NewManager(store, cfg.Memory, opts)
	if err != nil {
		return nil, fmt.Errorf("conversation memory: %w", err)
	}
	return mgr, nil
}

// languageParts are the readers of language memory is given: the
// follow-up rewriter, the summarizer and the extractor.
type languageParts struct {
	rewriter   memory.Rewriter
	summarizer memory.Summarizer
	extractor  memory.Extractor
}

// memoryParts returns model m's parts: with a generative model, the
// memory_* prompts to it, and nothing offline — the model alone decides
// the standalone question; with the offline model, the extractive
// stand-ins (offlineParts).
func memoryParts(m llm.Model, name string, tokens llm.TokenCounter, vocab extractive.Vocabulary) languageParts {
	if llm.IsExtractive(m) {
		return offlineParts(vocab, tokens)
	}
	return languageParts{
		rewriter:   memory.NewModelRewriter(m, name),
		summarizer: memory.NewModelSummarizer(m, name),
		extractor:  memory.NewModelExtractor(m, name),
	}
}

// offlineParts makes the extractive rewriter, summarizer and extractor,
// which call no model. A variable, so that a test can tell whether they
// are made.
var offlineParts = func(vocab extractive.Vocabulary, tokens llm.TokenCounter) languageParts {
	return languageParts{
		rewriter:   extractive.NewRewriter(vocab, tokens),
		summarizer: extractive.NewSummarizer(tokens),
		extractor:  extractive.NewExtractor(),
	}
}

// NewEmbedder returns the configured embeddings endpoint, or the offline
// hashed n-gram embedder when none is configured.
func NewEmbedder(cfg config.Config) llm.Embedder {
	if cfg.Embed.BaseURL == "" {
		return retrieve.NewHashEmbedder(config.OfflineEmbedDim)
	}
	return llm.NewClient(llm.ClientConfig{
		Name: cfg.Embed.Model, BaseURL: cfg.Embed.BaseURL, APIKey: cfg.Embed.APIKey,
		Model: cfg.Embed.Model, EmbedModel: cfg.Embed.Model, EmbedBatch: cfg.Embed.BatchSize,
		Timeout: cfg.LLM.Timeout, MaxRetries: cfg.LLM.MaxRetries, RetryBackoff: cfg.LLM.RetryBackoff,
	})
}

// NewKB opens the knowledge bases; opts configure the service further.
func NewKB(cfg config.Config, models *llm.Registry, opts ...kb.Option) (*kb.Service, error) {
	kcfg := cfg.KBConfig()
	// The demo's profile is built in: any knowledge base may name it.
	prof, err := demo.StructureProfile()
	if err != nil {
		return nil, err
	}
	cat, err := OpenKBCatalog(kcfg)
	if err != nil {
		return nil, fmt.Errorf("knowledge bases: %w", err)
	}
	svc, err := kb.New(kcfg, cat, NewEmbedder(cfg), models, append([]kb.Option{kb.WithProfiles(prof)}, opts...)...)
	if err != nil {
		cat.Close()
		return nil, fmt.Errorf("knowledge bases: %w", err)
	}
	return svc, nil
}

// OpenKBCatalog opens where kb.store keeps the knowledge bases: kb.db files
// under kb.dir, or the PostgreSQL registry at kb.dsn.
func OpenKBCatalog(kcfg kb.Config) (kb.Catalog, error) {
	if err := kcfg.Validate(); err != nil {
		return nil, err
	}
	if kcfg.Store != kb.KBStorePostgres {
		return sqlite.NewKBCatalog(kcfg.Dir), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return postgres.OpenKBCatalog(ctx, kcfg.DSN)
}

// offlineProfiles are the profiles the offline model reads parts named by
// with: the demo's, which the binary ships, and those of dir
// (kb.profiles_dir, "" for none; validated with the configuration). A
// reply reads with the ones its evidence's knowledge bases name.
func offlineProfiles(dir string) []*docstruct.Profile {
	var out []*docstruct.Profile
	if p, err := demo.StructureProfile(); err == nil { // the embedded profile is validated by demo's tests
		out = append(out, p)
	}
	if ps, err := kb.LoadProfiles(dir); err == nil {
		out = append(out, ps...)
	}
	return out
}
