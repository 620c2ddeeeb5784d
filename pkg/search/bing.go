package search

import (
	"context"
	"fmt"
	"net/url"
)

// BingEndpoint is the Bing Web Search API v7 endpoint.
const BingEndpoint = "https://api.bing.microsoft.com/v7.0/search"

// Bing searches the Bing Web Search API v7: GET ?q=...&count=N&mkt=...
// with the key in the Ocp-Apim-Subscription-Key header; results are
// webPages.value[] {name, url, snippet}.
type Bing struct {
	providerBase
	endpoint, key, market string
}

// NewBing returns a Bing Web Search client.
func NewBing(o ProviderOptions) *Bing {
	base, ep := newProvider(o, "bing", BingEndpoint)
	return &Bing{providerBase: base, endpoint: ep, key: o.APIKey, market: o.Language}
}

// Search returns up to n (at most 50) web results.
func (b *Bing) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 50)
	v := url.Values{"q": {query}, "count": {fmt.Sprint(n)}, "responseFilter": {"Webpages"}, "textDecorations": {"false"}}
	if b.market != "" {
		v.Set("mkt", b.market)
	}
	var r struct {
		Type     string     `json:"_type"`
		WebPages *bingPages `json:"webPages"`
	}
	req := getRequest(b.endpoint, v, "Ocp-Apim-Subscription-Key", b.key)
	if _, err := b.getJSON(ctx, req, messageAt("errors.0.message", "error.message", "message"), &r); err != nil {
		return nil, err
	}
	if r.WebPages == nil {
		if r.Type != "SearchResponse" {
			return nil, &ProviderError{Provider: b.name, Kind: ErrBadResponse, Msg: "reply is not a SearchResponse"}
		}
		return []Result{}, nil // no web results for this query
	}
	return r.WebPages.results(b.name, n), nil
}

// bingPages is the webPages answer, shared with Bocha, whose replies follow
// Bing's shape.
type bingPages struct {
	Value []bingPage `json:"value"`
}

type bingPage struct {
	Name            string `json:"name"`
	URL             string `json:"url"`
	Snippet         string `json:"snippet"`
	Summary         string `json:"summary"` // bocha, when asked
	DatePublished   string `json:"datePublished"`
	DateLastCrawled string `json:"dateLastCrawled"`
}

func (p bingPages) results(engine string, n int) []Result {
	return firstResults(p.Value, n, func(v bingPage) Result {
		r := Result{Title: stripTags(v.Name), URL: v.URL, Snippet: stripTags(v.Snippet), Engine: engine, Published: v.DatePublished}
		if r.Published == "" {
			r.Published = v.DateLastCrawled
		}
		if v.Summary != "" && len(v.Summary) > len(v.Snippet) {
			r.Snippet = stripTags(v.Summary)
		}
		return r
	})
}
