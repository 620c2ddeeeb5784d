package search

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// BraveEndpoint is the Brave Search web search endpoint.
const BraveEndpoint = "https://api.search.brave.com/res/v1/web/search"

// Brave searches the Brave Search API: GET ?q=...&count=N&search_lang=...
// with the key in the X-Subscription-Token header; results are
// web.results[] {title, url, description, extra_snippets}.
type Brave struct {
	providerBase
	endpoint, key, lang string
}

// NewBrave returns a Brave Search client.
func NewBrave(o ProviderOptions) *Brave {
	base, ep := newProvider(o, "brave", BraveEndpoint)
	return &Brave{providerBase: base, endpoint: ep, key: o.APIKey, lang: o.Language}
}

type braveResult struct {
	Title         string   `json:"title"`
	URL           string   `json:"url"`
	Description   string   `json:"description"`
	ExtraSnippets []string `json:"extra_snippets"`
	PageAge       string   `json:"page_age"`
	Age           string   `json:"age"`
}

// Search returns up to n (at most 20, the API's page size) web results.
func (b *Brave) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 20)
	v := url.Values{"q": {query}, "count": {fmt.Sprint(n)}, "extra_snippets": {"true"}}
	if b.lang != "" {
		v.Set("search_lang", b.lang)
	}
	var r struct {
		Type string `json:"type"`
		Web  *struct {
			Results []braveResult `json:"results"`
		} `json:"web"`
	}
	if _, err := b.getJSON(ctx, getRequest(b.endpoint, v, "X-Subscription-Token", b.key), braveError, &r); err != nil {
		return nil, err
	}
	if r.Web == nil {
		if r.Type != "search" {
			return nil, &ProviderError{Provider: b.name, Kind: ErrBadResponse, Msg: "reply is not a web search reply"}
		}
		return []Result{}, nil
	}
	return firstResults(r.Web.Results, n, func(x braveResult) Result {
		snip := stripTags(x.Description)
		if len(x.ExtraSnippets) > 0 {
			parts := []string{snip}
			for _, e := range x.ExtraSnippets {
				parts = append(parts, stripTags(e))
			}
			snip = strings.Join(parts, " … ")
		}
		pub := x.PageAge
		if pub == "" {
			pub = x.Age
		}
		return Result{Title: stripTags(x.Title), URL: x.URL, Snippet: snip, Engine: b.name, Published: pub}
	}), nil
}

// braveError reads Brave's ErrorResponse. Brave answers a bad key with 422
// SUBSCRIPTION_TOKEN_INVALID, so the code decides the kind.
func braveError(_ int, body []byte) (string, error) {
	msg := jsonMessage(body, "error.detail", "message")
	code := jsonMessage(body, "error.code")
	if code != "" && msg != "" {
		msg = code + ": " + msg
	}
	switch {
	case strings.Contains(code, "TOKEN") || jsonMessage(body, "error.meta.component") == "authentication":
		return msg, ErrAuth
	case strings.Contains(code, "RATE_LIMIT") || strings.Contains(code, "QUOTA"):
		return msg, ErrQuota
	}
	return msg, nil
}
