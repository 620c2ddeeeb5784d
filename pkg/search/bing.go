package search

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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
	ep := o.BaseURL
	if ep == "" {
		ep = BingEndpoint
	}
	return &Bing{providerBase: newBase(o.Name, "bing", o.Client, o.Timeout), endpoint: ep, key: o.APIKey, market: o.Language}
}

// Search returns up to n (at most 50) web results.
func (b *Bing) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 50)
	ctx, cancel := b.withTimeout(ctx)
	defer cancel()
	body, err := b.do(ctx, b.request(query, n), messageAt("errors.0.message", "error.message", "message"))
	if err != nil {
		return nil, err
	}
	return b.parse(body, n)
}

func (b *Bing) request(query string, n int) *http.Request {
	v := url.Values{}
	v.Set("q", query)
	v.Set("count", fmt.Sprint(n))
	v.Set("responseFilter", "Webpages")
	v.Set("textDecorations", "false")
	if b.market != "" {
		v.Set("mkt", b.market)
	}
	req, _ := http.NewRequest(http.MethodGet, b.endpoint+sep(b.endpoint)+v.Encode(), nil)
	req.Header.Set("Ocp-Apim-Subscription-Key", b.key)
	req.Header.Set("Accept", "application/json")
	return req
}

// bingPages is the webPages answer, shared with Bocha, whose replies follow
// Bing's shape.
type bingPages struct {
	Value []struct {
		Name            string `json:"name"`
		URL             string `json:"url"`
		Snippet         string `json:"snippet"`
		Summary         string `json:"summary"` // bocha, when asked
		DatePublished   string `json:"datePublished"`
		DateLastCrawled string `json:"dateLastCrawled"`
	} `json:"value"`
}

func (p bingPages) results(engine string, n int) []Result {
	var out []Result
	for _, v := range p.Value {
		if v.URL == "" {
			continue
		}
		r := Result{Title: stripTags(v.Name), URL: v.URL, Snippet: stripTags(v.Snippet), Engine: engine, Published: v.DatePublished}
		if r.Published == "" {
			r.Published = v.DateLastCrawled
		}
		if v.Summary != "" && len(v.Summary) > len(v.Snippet) {
			r.Snippet = stripTags(v.Summary)
		}
		out = append(out, r)
		if len(out) == n {
			break
		}
	}
	return out
}

func (b *Bing) parse(body []byte, n int) ([]Result, error) {
	var r struct {
		Type     string     `json:"_type"`
		WebPages *bingPages `json:"webPages"`
	}
	if err := b.decode(body, &r); err != nil {
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

// sep is the separator before a query string appended to endpoint.
func sep(endpoint string) string {
	if strings.Contains(endpoint, "?") {
		return "&"
	}
	return "?"
}
