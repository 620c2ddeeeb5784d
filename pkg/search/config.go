package search

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Providers are the values EngineConfig.Provider may take.
var Providers = []string{"searxng", "bing", "brave", "tavily", "google", "bocha", "duckduckgo", "local", "combined"}

// needsKey lists the providers that cannot work without api_key.
var needsKey = map[string]bool{"bing": true, "brave": true, "tavily": true, "google": true, "bocha": true}

// LocalEngine is the name of the built-in offline engine.
const LocalEngine = "local"

// Config configures the search answerer. Start from DefaultConfig and
// overlay the user's settings; then Validate.
type Config struct {
	// Default is the engine used when a request names none.
	Default string `yaml:"default"`
	// TopK is how many results a search asks for when a request does not say.
	TopK int `yaml:"top_k"`
	// Local configures the built-in offline engine named "local". Its folder
	// can also be set by the environment variable MIXCHAT_SEARCH_LOCAL_DIR
	// (mapped by the configuration loader).
	Local LocalConfig `yaml:"local"`
	// Engines are the other engines, each a provider with its settings, or a
	// combination of engines (provider "combined").
	Engines []EngineConfig `yaml:"engines"`
	// Fetch configures reading the result pages themselves.
	Fetch FetchConfig `yaml:"fetch"`
}

// LocalConfig configures an offline engine over a folder.
type LocalConfig struct {
	// Dir is the folder of .html/.htm/.md/.markdown/.txt files to index
	// (recursively). Empty leaves the engine unavailable.
	Dir string `yaml:"dir"`
	// Refresh is how often, at most, a search checks the folder for added,
	// changed or removed files (by listing, size and modification time);
	// 0 checks on every search, a negative value never. A search that
	// finds a check running does not wait for it.
	Refresh time.Duration `yaml:"refresh"`
	// MaxFileBytes skips larger files; 0 means 16 MiB.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
}

// EngineConfig configures one named engine.
type EngineConfig struct {
	Name     string `yaml:"name"`
	Provider string `yaml:"provider"` // one of Providers
	// BaseURL is the endpoint to call. Required for searxng (the instance's
	// root, e.g. http://127.0.0.1:8888); for the commercial APIs it
	// replaces the public endpoint (a proxy or a test server).
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	CX      string `yaml:"cx"` // Google Programmable Search engine id
	// Language is passed as the provider's language or market parameter
	// (searxng language, bing mkt, brave search_lang, google lr,
	// duckduckgo kl), e.g. "zh-CN".
	Language   string        `yaml:"language"`
	Categories []string      `yaml:"categories"` // searxng categories, e.g. [general]
	Timeout    time.Duration `yaml:"timeout"`    // per search; 0 means 10s
	Dir        string        `yaml:"dir"`        // provider local: the folder
	Engines    []string      `yaml:"engines"`    // provider combined: member engine names
}

// FetchConfig configures reading result pages.
type FetchConfig struct {
	Enabled bool `yaml:"enabled"`
	// MaxPages is how many of the top results are read; 0 means 3.
	MaxPages int `yaml:"max_pages"`
	// Timeout bounds each page; 0 means 8s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxBytes is the largest body read per page; a page that declares a
	// larger size is skipped, a longer body is cut. 0 means 2 MiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// Concurrency is how many pages are read at once; 0 means 4.
	Concurrency int `yaml:"concurrency"`
	// CacheTTL is how long a read page is kept; 0 disables the cache.
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// CacheSize is the most pages kept; 0 means 256.
	CacheSize int    `yaml:"cache_size"`
	UserAgent string `yaml:"user_agent"` // empty means DefaultUserAgent
	// AllowPrivate turns the SSRF guard off: pages on loopback, private,
	// link-local, CGNAT and cloud-metadata addresses may be read. Only for
	// an intranet deployment that means it.
	AllowPrivate bool `yaml:"allow_private"`
	// AllowNetworks lets pages on these networks (CIDR, e.g.
	// 10.1.0.0/16) through the guard while it stays on for the rest.
	AllowNetworks []string `yaml:"allow_networks"`
	// Passages is how many passages of each page are kept (the ones most
	// relevant to the question); 0 means 3. PassageChars is a passage's
	// target size in characters; 0 means 400.
	Passages     int `yaml:"passages"`
	PassageChars int `yaml:"passage_chars"`
}

// DefaultUserAgent identifies mixchat's page reader.
const DefaultUserAgent = "Mozilla/5.0 (compatible; mixchat/1.0; +https://github.com/mixchat/mixchat)"

// DefaultConfig returns the defaults: the offline local engine (its folder
// still to be set), 3 results, page reading off.
func DefaultConfig() Config {
	return Config{
		Default: LocalEngine,
		TopK:    3,
		Local:   LocalConfig{Refresh: 2 * time.Second, MaxFileBytes: 16 << 20},
		Fetch: FetchConfig{
			MaxPages:     3,
			Timeout:      8 * time.Second,
			MaxBytes:     2 << 20,
			Concurrency:  4,
			CacheTTL:     10 * time.Minute,
			CacheSize:    256,
			UserAgent:    DefaultUserAgent,
			Passages:     3,
			PassageChars: 400,
		},
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("invalid search config")

// Validate checks c and reports every problem, naming each field by its
// path (search.engines[1].provider). A commercial engine without api_key is
// not an error here: it is listed as unavailable, and using it says why.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: search.%s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...)))
	}
	if c.TopK < 0 || c.TopK > 50 {
		bad("top_k", "must be between 1 and 50 (0 means 3), got %d", c.TopK)
	}
	if c.Local.MaxFileBytes < 0 {
		bad("local.max_file_bytes", "must not be negative")
	}
	names := map[string]string{LocalEngine: "the built-in local engine"}
	for i, e := range c.Engines {
		f := fmt.Sprintf("engines[%d]", i)
		switch {
		case e.Name == "":
			bad(f+".name", "is empty")
		case strings.ContainsAny(e.Name, ", \t\n"):
			bad(f+".name", "%q must not contain commas or white space", e.Name)
		case names[e.Name] != "":
			bad(f+".name", "%q is already used by %s", e.Name, names[e.Name])
		default:
			names[e.Name] = f
		}
		if !slices.Contains(Providers, e.Provider) {
			bad(f+".provider", "%q is not one of %s", e.Provider, strings.Join(Providers, ", "))
		}
		if e.Timeout < 0 {
			bad(f+".timeout", "must not be negative")
		}
		if e.BaseURL != "" {
			if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad(f+".base_url", "%q is not an http(s) URL", e.BaseURL)
			}
		}
		switch e.Provider {
		case "searxng":
			if e.BaseURL == "" {
				bad(f+".base_url", "is required for provider searxng (the instance's address, e.g. http://127.0.0.1:8888)")
			}
		case "google":
			if e.APIKey != "" && e.CX == "" {
				bad(f+".cx", "is required for provider google (the Programmable Search engine id)")
			}
		case "local":
			if e.Dir == "" {
				bad(f+".dir", "is required for provider local")
			}
		case "combined":
			if len(e.Engines) < 2 {
				bad(f+".engines", "a combined engine needs at least two member engines")
			}
		}
	}
	// Members of combined engines must name non-combined engines.
	kinds := map[string]string{LocalEngine: "local"}
	for _, e := range c.Engines {
		kinds[e.Name] = e.Provider
	}
	for i, e := range c.Engines {
		if e.Provider != "combined" {
			continue
		}
		for j, m := range e.Engines {
			switch p, ok := kinds[m]; {
			case !ok:
				bad(fmt.Sprintf("engines[%d].engines[%d]", i, j), "%q is not a configured engine (have: %s)", m, strings.Join(sortedKeys(kinds), ", "))
			case p == "combined":
				bad(fmt.Sprintf("engines[%d].engines[%d]", i, j), "%q is itself combined; list its members instead", m)
			}
		}
	}
	if c.Default != "" {
		if _, ok := kinds[c.Default]; !ok {
			bad("default", "%q is not a configured engine (have: %s)", c.Default, strings.Join(sortedKeys(kinds), ", "))
		}
	}
	fc := c.Fetch
	if fc.MaxPages < 0 || fc.MaxPages > 20 {
		bad("fetch.max_pages", "must be between 0 and 20, got %d", fc.MaxPages)
	}
	negative := map[string]bool{"timeout": fc.Timeout < 0, "max_bytes": fc.MaxBytes < 0, "concurrency": fc.Concurrency < 0,
		"cache_ttl": fc.CacheTTL < 0, "cache_size": fc.CacheSize < 0, "passages": fc.Passages < 0, "passage_chars": fc.PassageChars < 0}
	for _, k := range []string{"timeout", "max_bytes", "concurrency", "cache_ttl", "cache_size", "passages", "passage_chars"} {
		switch {
		case negative[k] && k == "cache_ttl":
			bad("fetch.cache_ttl", "must not be negative (0 disables the cache)")
		case negative[k]:
			bad("fetch."+k, "must not be negative")
		}
	}
	for i, n := range fc.AllowNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			bad(fmt.Sprintf("fetch.allow_networks[%d]", i), "%q is not a CIDR network such as 10.1.0.0/16", n)
		}
	}
	return errors.Join(errs...)
}
