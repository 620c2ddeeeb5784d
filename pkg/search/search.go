// Package search is mixchat's search-engine answerer: Searcher providers (one
// file each: SearxNG, Bing, Brave, Tavily, Google Programmable Search, Bocha,
// DuckDuckGo and the offline `local` engine), engines that combine several
// providers, page fetching and main-text extraction behind an SSRF guard, and
// the answerer that answers a question from the results with numbered
// citations.
//
// Service ties them together from a Config: it builds the configured engines,
// answers the rag.Answerer contract, and serves the HTTP layer's needs
// (listing engines, raw results for debugging).
package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Result is one search hit.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"` // short summary; the local engine marks matches with **bold**
	// Engine names the engine (or engines, comma-separated, after a merge)
	// that found the result.
	Engine string `json:"engine,omitempty"`
	// Score is the provider's own relevance when it gives one; scores of
	// different providers are not comparable.
	Score     float64 `json:"score,omitempty"`
	Published string  `json:"published,omitempty"` // publication date as the provider gives it
	// Content is longer plain text from the page itself: the passages most
	// relevant to the query, filled by the local engine and by page
	// fetching. Empty when only the snippet is known.
	Content string `json:"content,omitempty"`
}

// Text returns the text an answer should be grounded on: Content when the
// page was read, else the snippet without highlight marks.
func (r Result) Text() string {
	if r.Content != "" {
		return r.Content
	}
	return stripHighlight(r.Snippet)
}

// Searcher is a search engine.
//
// Search returns at most n results for query, best first; n <= 0 means the
// engine's default. No results is an empty list and a nil error. Failures
// of a remote provider are *ProviderError values naming the provider; a
// cancelled ctx stops the search and its error wraps ctx.Err().
type Searcher interface {
	Search(ctx context.Context, query string, n int) ([]Result, error)
}

// SearcherFunc adapts a function to Searcher.
type SearcherFunc func(ctx context.Context, query string, n int) ([]Result, error)

// Search calls f.
func (f SearcherFunc) Search(ctx context.Context, query string, n int) ([]Result, error) {
	return f(ctx, query, n)
}

// Kinds of provider failure, matched with errors.Is on a *ProviderError.
var (
	ErrAuth        = errors.New("API key rejected")             // 401, 403
	ErrQuota       = errors.New("quota or rate limit exceeded") // 429
	ErrTimeout     = errors.New("timed out")                    // deadline, 408, 504
	ErrUnreachable = errors.New("unreachable")                  // no response
	ErrBadResponse = errors.New("unexpected response")          // other statuses, unparsable bodies
)

// ProviderError is a failure of one search provider.
type ProviderError struct {
	Provider string // the engine's configured name, e.g. "bing"
	Status   int    // HTTP status; 0 when no response was received
	Kind     error  // one of ErrAuth, ErrQuota, ErrTimeout, ErrUnreachable, ErrBadResponse
	Msg      string // the provider's own message, when it sent one
	Err      error  // the underlying error, if any
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("search engine ")
	b.WriteString(e.Provider)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the kind and the underlying error, so errors.Is matches
// both (ErrTimeout and context.DeadlineExceeded, say).
func (e *ProviderError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// UnknownEngineError is returned for an engine name that is not configured.
type UnknownEngineError struct {
	Name       string
	Configured []string // the engines that are
}

func (e *UnknownEngineError) Error() string {
	return fmt.Sprintf("unknown search engine %q (configured: %s)", e.Name, strings.Join(e.Configured, ", "))
}

// UnavailableEngineError is returned for an engine that is configured but
// cannot be used, such as a commercial API without a key.
type UnavailableEngineError struct {
	Name      string
	Reason    string
	Available []string // the engines that can be used
}

func (e *UnavailableEngineError) Error() string {
	avail := "none"
	if len(e.Available) > 0 {
		avail = strings.Join(e.Available, ", ")
	}
	return fmt.Sprintf("search engine %q is not available: %s (available: %s)", e.Name, e.Reason, avail)
}

// EngineInfo describes one configured engine.
type EngineInfo struct {
	Name      string   `json:"name"`
	Provider  string   `json:"provider"`
	Default   bool     `json:"default,omitempty"`
	Available bool     `json:"available"`
	Reason    string   `json:"reason,omitempty"`  // why it is unavailable
	Engines   []string `json:"engines,omitempty"` // members of a combined engine
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// stripHighlight removes the **bold** marks the local engine puts around
// matches.
func stripHighlight(s string) string { return strings.ReplaceAll(s, "**", "") }
