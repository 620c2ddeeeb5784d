// Package config is mixchat's configuration: the embedded defaults, the
// YAML file (configs/mixchat.yaml documents every field), MIXCHAT_*
// environment variables and the command-line flags every command that
// builds the app shares, with one validation naming each field. The server
// (cmd/mixchat) and the benchmarks (cmd/mixchat-eval) load it the same way.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/obs"
	"github.com/mixchat/mixchat/pkg/search"
	"github.com/mixchat/mixchat/pkg/server"
)

// Config is mixchat's whole configuration: embedded defaults, then a YAML
// file, then MIXCHAT_* environment variables, then command-line flags.
// configs/mixchat.yaml documents every field.
type Config struct {
	Server ServerConfig  `yaml:"server"`
	Log    LogConfig     `yaml:"log"`
	LLM    LLMConfig     `yaml:"llm"`
	Embed  EmbedConfig   `yaml:"embed"`
	Store  StoreConfig   `yaml:"store"`
	Memory memory.Config `yaml:"memory"`
	Chat   ChatConfig    `yaml:"chat"`
	KB     kb.Config     `yaml:"kb"`
	Search search.Config `yaml:"search"`
	Mix    mix.Config    `yaml:"mix"`
	Auth   auth.Config   `yaml:"auth"`
	// Telemetry says where traces go; metrics are always on /metrics.
	Telemetry obs.TelemetryConfig `yaml:"telemetry"`
	// Demo makes the first start with an empty data directory create the
	// zhouyi knowledge base (then the default one) and the local search
	// engine's pages from the shipped Zhouyi texts (package demo).
	Demo bool `yaml:"demo"`
}

// ServerConfig is the HTTP server's.
type ServerConfig struct {
	Addr            string        `yaml:"addr"`
	DataDir         string        `yaml:"data_dir"`
	MaxBodyBytes    int64         `yaml:"max_body_bytes"`
	MaxQueryChars   int           `yaml:"max_query_chars"` // longest question of a chat endpoint, in characters
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// StreamWriteTimeout bounds the write of each event of a streamed
	// reply: a client that stops reading for longer loses its stream
	// (the turn is stored as interrupted) instead of holding it open.
	StreamWriteTimeout time.Duration `yaml:"stream_write_timeout"`
	// PublicHosts are the names clients reach the server by besides IP
	// addresses and localhost ("chat.example.com", "*.example.com", "*"
	// for any); requests for other Host names are refused (DNS rebinding).
	PublicHosts []string `yaml:"public_hosts"`

	// Connections (pkg/server conns.go): how long the server waits for a
	// client and how many connections one client address may hold.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"` // a request's headers
	ReadTimeout       time.Duration `yaml:"read_timeout"`        // a request's body (the first stretch of an upload's)
	WriteTimeout      time.Duration `yaml:"write_timeout"`       // a reply that is not a stream (streams: per event)
	IdleTimeout       time.Duration `yaml:"idle_timeout"`        // a keep-alive connection with no request
	MinTransferRate   int64         `yaml:"min_transfer_rate"`   // bytes a second an upload's body or a reply must average after read_timeout / write_timeout
	MaxConnsPerClient int           `yaml:"max_conns_per_client"`
	// TrustedProxies are the addresses or CIDR ranges of reverse proxies
	// whose X-Forwarded-For names the client (access log); none by default.
	TrustedProxies []string `yaml:"trusted_proxies"`
}

// LogConfig sets the log's level and format.
type LogConfig struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// LLMConfig configures the chat models. BaseURL/APIKey/Model define the
// primary OpenAI-compatible endpoint (MIXCHAT_LLM_BASE_URL, ...); Models adds
// more named ones. The offline extractive model is always available as
// "offline" and is the default when no endpoint is configured.
type LLMConfig struct {
	Default      string        `yaml:"default"`
	BaseURL      string        `yaml:"base_url"`
	APIKey       string        `yaml:"api_key"`
	Model        string        `yaml:"model"`
	Timeout      time.Duration `yaml:"timeout"`
	MaxRetries   int           `yaml:"max_retries"`
	RetryBackoff time.Duration `yaml:"retry_backoff"`
	Models       []ModelConfig `yaml:"models"`
	// Prices per model name price each reply's tokens in its usage.
	Prices obs.Prices `yaml:"prices"`
}

// ModelConfig is one named model endpoint.
type ModelConfig struct {
	Name    string        `yaml:"name"`
	BaseURL string        `yaml:"base_url"`
	APIKey  string        `yaml:"api_key"`
	Model   string        `yaml:"model"`
	Timeout time.Duration `yaml:"timeout"`
}

// EmbedConfig configures the embedding endpoint; with no BaseURL the
// offline hashed n-gram embedder is used.
type EmbedConfig struct {
	BaseURL    string `yaml:"base_url"`
	APIKey     string `yaml:"api_key"`
	Model      string `yaml:"model"`
	Dimensions int    `yaml:"dimensions"`
	BatchSize  int    `yaml:"batch_size"`
}

// StoreConfig selects the conversation store.
type StoreConfig struct {
	Driver string `yaml:"driver"`
	DSN    string `yaml:"dsn"`
}

// ChatConfig holds the LLM-chat answerer's defaults.
type ChatConfig struct {
	PromptName  string   `yaml:"prompt_name"`
	Temperature *float32 `yaml:"temperature"`
	MaxTokens   int      `yaml:"max_tokens"`
}

func defaultServerConfig() ServerConfig {
	cl := server.DefaultConnLimits()
	return ServerConfig{Addr: "127.0.0.1:7861", DataDir: "./data", MaxBodyBytes: 8 << 20, MaxQueryChars: 32000, ShutdownTimeout: 30 * time.Second, StreamWriteTimeout: 15 * time.Second,
		ReadHeaderTimeout: cl.ReadHeaderTimeout, ReadTimeout: cl.ReadTimeout, WriteTimeout: cl.WriteTimeout, IdleTimeout: cl.IdleTimeout,
		MinTransferRate: cl.MinTransferRate, MaxConnsPerClient: cl.MaxConnsPerClient, TrustedProxies: []string{}}
}

// ConnLimits are the server's connection settings as pkg/server takes
// them.
func (c ServerConfig) ConnLimits() server.ConnLimits {
	return server.ConnLimits{ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout,
		IdleTimeout: c.IdleTimeout, MinTransferRate: c.MinTransferRate, MaxConnsPerClient: c.MaxConnsPerClient, TrustedProxies: c.TrustedProxies}
}

// DefaultConfig returns the embedded defaults: a single machine, zero setup.
func DefaultConfig() Config {
	return Config{
		Server:    defaultServerConfig(),
		Log:       LogConfig{Level: "info", Format: "text"},
		LLM:       LLMConfig{Timeout: 120 * time.Second, MaxRetries: 3, RetryBackoff: 500 * time.Millisecond},
		Embed:     EmbedConfig{BatchSize: 64},
		Store:     StoreConfig{Driver: "sqlite"},
		Memory:    memory.DefaultConfig(),
		Chat:      ChatConfig{PromptName: "with_history"},
		KB:        defaultKBConfig(),
		Search:    search.DefaultConfig(),
		Mix:       mix.DefaultConfig(),
		Auth:      auth.DefaultConfig(),
		Telemetry: obs.DefaultTelemetryConfig(),
		Demo:      true,
	}
}

// envRef is a ${VAR} reference in a configuration value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ParseConfig reads YAML from r over the defaults in c. ${VAR} in a value is
// replaced by the environment variable VAR (comments are left alone); an
// unset VAR is an error. Unknown fields are errors.
func ParseConfig(r io.Reader, c *Config) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("parse config: %w", err)
	}
	var missing []string
	var expand func(n *yaml.Node)
	expand = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				v, ok := os.LookupEnv(name)
				if !ok {
					missing = append(missing, name)
				}
				return v
			})
		}
		for _, k := range n.Content {
			expand(k)
		}
	}
	expand(&doc)
	if len(missing) > 0 {
		return fmt.Errorf("config refers to unset environment variables: %s", strings.Join(missing, ", "))
	}
	// Decode the expanded document strictly: re-encode and decode with
	// KnownFields, which yaml.Node.Decode does not offer.
	b, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("parse config: %w", err)
	}
	strict := yaml.NewDecoder(bytes.NewReader(b))
	strict.KnownFields(true)
	if err := strict.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("parse config: %w", err)
	}
	return nil
}

// LoadConfig builds the configuration: defaults, then the file at path (if
// not empty), then the environment.
func LoadConfig(path string, environ []string) (Config, error) {
	c := DefaultConfig()
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return c, fmt.Errorf("open config: %w", err)
		}
		defer f.Close()
		if err := ParseConfig(f, &c); err != nil {
			return c, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := applyEnv(&c, environ); err != nil {
		return c, err
	}
	return c, nil
}

// applyEnv sets every scalar field from MIXCHAT_<SECTION>_<FIELD>, the
// names made of the YAML keys upper-cased and joined by underscores
// (MIXCHAT_SERVER_ADDR, MIXCHAT_LLM_BASE_URL, MIXCHAT_SEARCH_LOCAL_DIR).
// Lists are set in the file only.
func applyEnv(c *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "MIXCHAT_") {
			env[k] = v
		}
	}
	known := map[string]bool{}
	var errs []error
	walkFields(reflect.ValueOf(c).Elem(), "", func(key string, v reflect.Value) {
		name := "MIXCHAT_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(key))
		known[name] = true
		s, ok := env[name]
		if !ok {
			return
		}
		if err := setScalar(v, s); err != nil {
			errs = append(errs, fmt.Errorf("environment %s (%s): %w", name, key, err))
		}
	})
	for k := range env {
		if !known[k] && !strings.HasPrefix(k, "MIXCHAT_TEST_") {
			errs = append(errs, fmt.Errorf("environment %s names no setting", k))
		}
	}
	return errors.Join(errs...)
}

// walkFields calls fn for every settable scalar field below v with its
// dotted YAML key, and for every entry of a map of scalars (an inline map's
// keys sit beside the struct's own: mix.timeouts.kb); fn may set the value
// it is given.
func walkFields(v reflect.Value, prefix string, fn func(key string, v reflect.Value)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		inline := slices.Contains(strings.Split(opts, ","), "inline")
		if (tag == "" && !inline) || tag == "-" || !f.IsExported() {
			continue
		}
		key := prefix // an inline field's keys are its parent's
		switch {
		case tag != "" && prefix != "":
			key = prefix + "." + tag
		case tag != "":
			key = tag
		}
		fv := v.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)):
			walkFields(fv, key, fn)
		case f.Type.Kind() == reflect.Map && f.Type.Key().Kind() == reflect.String && scalar(f.Type.Elem()):
			keys := fv.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				e := reflect.New(f.Type.Elem()).Elem()
				e.Set(fv.MapIndex(k))
				fn(key+"."+k.String(), e)
				fv.SetMapIndex(k, e)
			}
		case f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map:
		default:
			fn(key, fv)
		}
	}
}

// scalar reports whether a setting of type t is one value (not a section
// or a list).
func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Map, reflect.Array, reflect.Interface:
		return false
	}
	return true
}

// setScalar parses s into v by v's type.
func setScalar(v reflect.Value, s string) error {
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		if err := setScalar(p.Elem(), s); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("want a duration such as 30s: %w", err)
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", s)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", s)
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("want a number, got %q", s)
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}

// fieldError names the field, the value and what is allowed.
func fieldError(field string, value any, allowed string) error {
	return fmt.Errorf("config: %s: %v is not valid; %s", field, value, allowed)
}

// Validate checks the configuration; every message names the field and the
// allowed values.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if _, _, err := net.SplitHostPort(c.Server.Addr); err != nil {
		add(fieldError("server.addr", strconv.Quote(c.Server.Addr), "want HOST:PORT such as 127.0.0.1:7861"))
	}
	if strings.TrimSpace(c.Server.DataDir) == "" {
		add(fieldError("server.data_dir", `""`, "want a directory path"))
	}
	if c.Server.MaxBodyBytes < 1024 {
		add(fieldError("server.max_body_bytes", c.Server.MaxBodyBytes, "want at least 1024"))
	}
	if c.Server.MaxQueryChars < 1 {
		add(fieldError("server.max_query_chars", c.Server.MaxQueryChars, "want at least 1"))
	}
	if c.Server.ShutdownTimeout < 0 {
		add(fieldError("server.shutdown_timeout", c.Server.ShutdownTimeout, "want a non-negative duration"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"server.read_header_timeout", c.Server.ReadHeaderTimeout}, {"server.read_timeout", c.Server.ReadTimeout},
		{"server.write_timeout", c.Server.WriteTimeout}, {"server.idle_timeout", c.Server.IdleTimeout}} {
		if d.v < time.Second || d.v > 24*time.Hour {
			add(fieldError(d.name, d.v, "want 1s to 24h"))
		}
	}
	if c.Server.MinTransferRate < 1 {
		add(fieldError("server.min_transfer_rate", c.Server.MinTransferRate, "want at least 1 (bytes a second)"))
	}
	if c.Server.MaxConnsPerClient < 0 {
		add(fieldError("server.max_conns_per_client", c.Server.MaxConnsPerClient, "want 0 (no cap) or more"))
	}
	for _, p := range c.Server.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				add(fieldError("server.trusted_proxies", strconv.Quote(p), "want an IP address or a CIDR range such as 10.0.0.0/8"))
			}
		}
	}
	if c.Server.StreamWriteTimeout <= 0 {
		add(fieldError("server.stream_write_timeout", c.Server.StreamWriteTimeout, "want a positive duration"))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add(fieldError("log.level", strconv.Quote(c.Log.Level), "allowed: debug, info, warn, error"))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add(fieldError("log.format", strconv.Quote(c.Log.Format), "allowed: text, json"))
	}
	if c.LLM.Timeout <= 0 {
		add(fieldError("llm.timeout", c.LLM.Timeout, "want a positive duration such as 120s"))
	}
	if c.LLM.MaxRetries < 0 || c.LLM.MaxRetries > 10 {
		add(fieldError("llm.max_retries", c.LLM.MaxRetries, "want 0 to 10"))
	}
	if c.LLM.BaseURL != "" && c.LLM.Model == "" {
		add(fieldError("llm.model", `""`, "want the model name the endpoint at llm.base_url serves (MIXCHAT_LLM_MODEL)"))
	}
	if c.LLM.BaseURL != "" {
		add(checkURL("llm.base_url", c.LLM.BaseURL))
	}
	names := map[string]bool{"offline": true}
	if c.LLM.BaseURL != "" {
		names[c.LLM.Model] = true
	}
	for i, m := range c.LLM.Models {
		f := fmt.Sprintf("llm.models[%d]", i)
		switch {
		case m.Name == "":
			add(fieldError(f+".name", `""`, "want a unique model name"))
		case names[m.Name]:
			add(fieldError(f+".name", strconv.Quote(m.Name), "names must be unique (offline is reserved)"))
		}
		names[m.Name] = true
		add(checkURL(f+".base_url", m.BaseURL))
		if m.Model == "" {
			add(fieldError(f+".model", `""`, "want the model name the endpoint serves"))
		}
	}
	if c.LLM.Default != "" && !names[c.LLM.Default] {
		add(fieldError("llm.default", strconv.Quote(c.LLM.Default), "allowed: "+strings.Join(sortedKeys(names), ", ")))
	}
	if c.Embed.BaseURL != "" {
		add(checkURL("embed.base_url", c.Embed.BaseURL))
		if c.Embed.Model == "" {
			add(fieldError("embed.model", `""`, "want the embedding model the endpoint at embed.base_url serves (MIXCHAT_EMBED_MODEL)"))
		}
	}
	if c.Embed.BatchSize < 1 || c.Embed.BatchSize > 2048 {
		add(fieldError("embed.batch_size", c.Embed.BatchSize, "want 1 to 2048"))
	}
	if c.Embed.Dimensions < 0 {
		add(fieldError("embed.dimensions", c.Embed.Dimensions, "want 0 (the model's) or a positive number"))
	}
	switch c.Store.Driver {
	case "sqlite":
	case "postgres":
		if c.Store.DSN == "" {
			add(fieldError("store.dsn", `""`, "want a PostgreSQL URL such as postgres://user:pass@host:5432/mixchat when store.driver is postgres"))
		}
	default:
		add(fieldError("store.driver", strconv.Quote(c.Store.Driver), "allowed: sqlite, postgres"))
	}
	add(c.Memory.Validate())
	if c.Memory.Model != "" && !names[c.Memory.Model] {
		add(fieldError("memory.model", strconv.Quote(c.Memory.Model), "allowed: "+strings.Join(sortedKeys(names), ", ")))
	}
	if t := c.Chat.Temperature; t != nil && (*t < 0 || *t > 2) {
		add(fieldError("chat.temperature", *t, "want 0 to 2"))
	}
	if c.Chat.MaxTokens < 0 {
		add(fieldError("chat.max_tokens", c.Chat.MaxTokens, "want 0 (no limit) or a positive number"))
	}
	add(c.KBConfig().Validate())
	add(c.Search.Validate())
	add(c.Mix.Validate())
	add(c.Auth.Validate())
	add(c.Telemetry.Validate())
	add(c.LLM.Prices.Validate())
	if unknown := c.LLM.Prices.Unknown(sortedKeys(names)); len(unknown) > 0 {
		add(fieldError("llm.prices", strings.Join(unknown, ", "), "price only configured models: "+strings.Join(sortedKeys(names), ", ")))
	}
	return errors.Join(errs...)
}

func checkURL(field, u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fieldError(field, strconv.Quote(u), "want an http:// or https:// URL")
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// defaultKBConfig is kb's defaults with the folder and embedding model left
// to be derived from server.data_dir and embed (see KBConfig).
func defaultKBConfig() kb.Config {
	c := kb.DefaultConfig()
	c.Dir = ""
	c.EmbedModel = ""
	return c
}

// OfflineEmbedDim is the dimension of the offline hashed n-gram embedder.
const OfflineEmbedDim = 512

// KBConfig resolves the knowledge bases' settings: kb.dir defaults to
// DATA_DIR/kb; kb.embed_model to embed.model when an embeddings endpoint is
// configured, else to the offline embedder's name; kb.dsn to store.dsn.
func (c *Config) KBConfig() kb.Config {
	k := c.KB
	if k.Dir == "" {
		k.Dir = filepath.Join(c.Server.DataDir, "kb")
	}
	if k.EmbedModel == "" {
		k.EmbedModel = fmt.Sprintf("hash-%d", OfflineEmbedDim)
		if c.Embed.BaseURL != "" {
			k.EmbedModel = c.Embed.Model
		}
	}
	if c.Embed.BaseURL != "" {
		k.EmbedBatch = c.Embed.BatchSize
	}
	if k.Store == kb.KBStorePostgres && k.DSN == "" {
		k.DSN = c.Store.DSN // the conversation store's server by default
	}
	return k
}

// SearchLocalDir is the offline search engine's folder: search.local.dir,
// or DATA_DIR/search.
func (c *Config) SearchLocalDir() string {
	if c.Search.Local.Dir != "" {
		return c.Search.Local.Dir
	}
	return filepath.Join(c.Server.DataDir, "search")
}

// SQLitePath is where the SQLite conversation store lives.
func (c *Config) SQLitePath() string {
	if c.Store.DSN != "" {
		return c.Store.DSN
	}
	return filepath.Join(c.Server.DataDir, "mixchat.db")
}
