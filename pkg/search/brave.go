package search

import (
	"context"
	"fmt"
	"net/http"
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
	ep := o.BaseURL
	if ep == "" {
		ep = BraveEndpoint
	}
	return &Brave{providerBase: newBase(o.Name, "brave", o.Client, o.Timeout), endpoint: ep, key: o.APIKey, lang: o.Language}
}

// Search returns up to n (at most 20, the API's page size) web results.
func (b *Brave) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 20)
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	body, err := b.do(ctx, b.request(query, n), braveError)
	if err != nil {
		return nil, err
	}
	var r struct {
		Type string `json:"type"`
		Web  *struct {
			Results []struct {
				Title         string   `json:"title"`
				URL           string   `json:"url"`
				Description   string   `json:"description"`
				ExtraSnippets []string `json:"extra_snippets"`
				PageAge       string   `json:"page_age"`
				Age           string   `json:"age"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := b.decode(body, &r); err != nil {
		return nil, err
	}
	out := []Result{}
	if r.Web == nil {
		if r.Type != "search" {
			return nil, &ProviderError{Provider: b.name, Kind: ErrBadResponse, Msg: "reply is not a web search reply"}
		}
		return out, nil
	}
	for _, x := range r.Web.Results {
		if x.URL == "" {
			continue
		}
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
		out = append(out, Result{Title: stripTags(x.Title), URL: x.URL, Snippet: snip, Engine: b.name, Published: pub})
		if len(out) == n {
			break
		}
	}
	return out, nil
}

func (b *Brave) request(query string, n int) *http.Request {
	v := url.Values{}
	v.Set("q", query)
	v.Set("count", fmt.Sprint(n))
	v.Set("extra_snippets", "true")
	if b.lang != "" {
		v.Set("search_lang", b.lang)
	}
	req, _ := http.NewRequest(http.MethodGet, b.endpoint+sep(b.endpoint)+v.Encode(), nil)
	req.Header.Set("X-Subscription-Token", b.key)
	req.Header.Set("Accept", "application/json")
	return req
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
