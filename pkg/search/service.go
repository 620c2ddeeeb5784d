package search

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Options are the Service's dependencies.
type Options struct {
	// Models serves Answer; it may be nil for a Service that only searches.
	Models llm.Models
	// Client sends the search providers' API requests; nil means a client
	// that honours the HTTP(S)_PROXY environment variables. Page reading
	// uses its own guarded client.
	Client HTTPDoer
}

// Service holds the configured engines and answers from them. It
// implements rag.Answerer. Create it with New.
type Service struct {
	cfg     Config
	models  llm.Models
	engines map[string]*engine
	order   []string // configured order: local first, then the list
	def     string
	fetcher *Fetcher // nil when page reading is off
}

type engine struct {
	info     EngineInfo
	searcher Searcher // nil when unavailable
	probe    probe    // the last Ping of a searcher that is a Pinger
}

// New validates cfg and builds its engines. An engine that cannot work (a
// commercial API without a key, a local folder that does not exist) is kept
// as unavailable with the reason, which list and use report.
func New(cfg Config, o Options) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Default == "" {
		cfg.Default = LocalEngine
	}
	if cfg.TopK == 0 {
		cfg.TopK = DefaultConfig().TopK
	}
	client := o.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		client = &http.Client{Transport: tr}
	}
	s := &Service{cfg: cfg, models: o.Models, engines: map[string]*engine{}, def: cfg.Default}

	local := &engine{info: EngineInfo{Name: LocalEngine, Provider: "local"}}
	if cfg.Local.Dir == "" {
		local.info.Reason = "no folder configured: set search.local.dir or MIXCHAT_SEARCH_LOCAL_DIR"
	} else if l, err := NewLocal(LocalOptions{Dir: cfg.Local.Dir, Refresh: cfg.Local.Refresh, MaxFileBytes: cfg.Local.MaxFileBytes}); err != nil {
		local.info.Reason = err.Error()
	} else {
		local.searcher = l
	}
	s.add(local)

	for _, ec := range cfg.Engines {
		if ec.Provider == "combined" {
			continue
		}
		s.add(buildEngine(ec, client, cfg))
	}
	for _, ec := range cfg.Engines {
		if ec.Provider != "combined" {
			continue
		}
		e := &engine{info: EngineInfo{Name: ec.Name, Provider: "combined", Engines: ec.Engines}}
		var members []NamedSearcher
		var skipped []string
		for _, m := range ec.Engines {
			if me := s.engines[m]; me != nil && me.searcher != nil {
				members = append(members, NamedSearcher{Name: m, Searcher: me.searcher})
			} else {
				skipped = append(skipped, m)
			}
		}
		switch {
		case len(members) == 0:
			e.info.Reason = "none of its engines is available: " + strings.Join(skipped, ", ")
		default:
			e.searcher = NewMulti(ec.Name, members...)
			if len(skipped) > 0 {
				e.info.Reason = "searching without unavailable " + strings.Join(skipped, ", ")
			}
		}
		s.add(e)
	}
	if cfg.Fetch.Enabled {
		f, err := NewFetcher(cfg.Fetch)
		if err != nil {
			return nil, err
		}
		s.fetcher = f
	}
	s.engines[s.def].info.Default = true
	return s, nil
}

func (s *Service) add(e *engine) {
	e.info.Available = e.searcher != nil
	s.engines[e.info.Name] = e
	s.order = append(s.order, e.info.Name)
}

// remoteProviders make the searchers of the remote providers, by name.
var remoteProviders = map[string]func(ProviderOptions) Searcher{
	"searxng": searcher(NewSearxNG), "bing": searcher(NewBing), "brave": searcher(NewBrave), "tavily": searcher(NewTavily),
	"google": searcher(NewGoogle), "bocha": searcher(NewBocha), "duckduckgo": searcher(NewDuckDuckGo),
}

// searcher adapts a provider's constructor to remoteProviders.
func searcher[T Searcher](newT func(ProviderOptions) T) func(ProviderOptions) Searcher {
	return func(o ProviderOptions) Searcher { return newT(o) }
}

// buildEngine makes the searcher of one non-combined engine.
func buildEngine(ec EngineConfig, client HTTPDoer, cfg Config) *engine {
	e := &engine{info: EngineInfo{Name: ec.Name, Provider: ec.Provider}}
	if needsKey[ec.Provider] && ec.APIKey == "" {
		e.info.Reason = fmt.Sprintf("api_key is empty: set search.engines[%s].api_key (e.g. api_key: ${%s_API_KEY})", ec.Name, strings.ToUpper(ec.Provider))
		return e
	}
	if ec.Provider == "google" && ec.CX == "" {
		e.info.Reason = "cx is empty: set the Programmable Search engine id"
		return e
	}
	o := ProviderOptions{Name: ec.Name, BaseURL: ec.BaseURL, APIKey: ec.APIKey, CX: ec.CX, Language: ec.Language,
		Categories: ec.Categories, Client: client, Timeout: ec.Timeout}
	if newRemote := remoteProviders[ec.Provider]; newRemote != nil {
		e.searcher = newRemote(o)
	}
	switch ec.Provider {
	case "local":
		l, err := NewLocal(LocalOptions{Name: ec.Name, Dir: ec.Dir, Refresh: cfg.Local.Refresh, MaxFileBytes: cfg.Local.MaxFileBytes})
		if err != nil {
			e.info.Reason = err.Error()
			return e
		}
		e.searcher = l
	}
	return e
}

// Default returns the default engine's name.
func (s *Service) Default() string { return s.def }

// TopK returns how many results a search takes when the request does not
// say.
func (s *Service) TopK() int { return s.cfg.TopK }

// Engines lists the configured engines, the built-in local one first.
func (s *Service) Engines() []EngineInfo {
	out := make([]EngineInfo, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.engines[n].info)
	}
	return out
}

// Names lists the configured engines' names.
func (s *Service) Names() []string { return slices.Clone(s.order) }

func (s *Service) available() []string {
	var out []string
	for _, n := range s.order {
		if s.engines[n].searcher != nil {
			out = append(out, n)
		}
	}
	return out
}

// Searcher returns the engine called name ("" means the default). It fails
// with *UnknownEngineError or *UnavailableEngineError.
func (s *Service) Searcher(name string) (Searcher, error) {
	if name == "" {
		name = s.def
	}
	e := s.engines[name]
	if e == nil {
		return nil, &UnknownEngineError{Name: name, Configured: s.Names()}
	}
	if e.searcher == nil {
		return nil, &UnavailableEngineError{Name: name, Reason: e.info.Reason, Available: s.available()}
	}
	return e.searcher, nil
}

// Search searches with the engine called engine ("" means the default);
// n <= 0 means TopK.
func (s *Service) Search(ctx context.Context, engine, query string, n int) ([]Result, error) {
	sr, err := s.Searcher(engine)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		n = s.cfg.TopK
	}
	return sr.Search(ctx, query, n)
}
