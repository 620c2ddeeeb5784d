package search

import (
	"context"
	"fmt"
	"strings"
)

// Brave searches the Brave Search API: GET ?q=...&count=N&search_lang=...
// with the key in the X-Subscription-Token header; results are
// web.results[] {title, url, description, extra_snippets}.
// o.Language is the search language (search_lang).
type Brave struct{ providerBase }

// NewBrave returns a Brave Search client.
func NewBrave(o ProviderOptions) *Brave { return &Brave{newProvider(o, "brave", BraveEndpoint)} }

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
	var r struct {
		Type string `json:"type"`
		Web  *struct {
			Results []braveResult `json:"results"`
		} `json:"web"`
	}
	v := params("q", query, "count", fmt.Sprint(n), "extra_snippets", "true", "search_lang", b.lang)
	if _, err := b.sendJSON(ctx, getRequest(b.endpoint, v, "X-Subscription-Token", b.key), braveError, &r); err != nil {
		return nil, err
	}
	if r.Web == nil {
		return b.emptyReply(r.Type == "search", "reply is not a web search reply")
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
