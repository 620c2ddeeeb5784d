package search

import (
	"context"
	"fmt"
)

// Bing searches the Bing Web Search API v7: GET ?q=...&count=N&mkt=...
// with the key in the Ocp-Apim-Subscription-Key header; results are
// webPages.value[] {name, url, snippet}.
// o.Language is the market (mkt).
type Bing struct{ providerBase }

// NewBing returns a Bing Web Search client.
func NewBing(o ProviderOptions) *Bing { return &Bing{newProvider(o, "bing", BingEndpoint)} }

// Search returns up to n (at most 50) web results.
func (b *Bing) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 50)
	var r struct {
		Type     string     `json:"_type"`
		WebPages *bingPages `json:"webPages"`
	}
	v := params("q", query, "count", fmt.Sprint(n), "responseFilter", "Webpages", "textDecorations", "false", "mkt", b.lang)
	req := getRequest(b.endpoint, v, "Ocp-Apim-Subscription-Key", b.key)
	if _, err := b.sendJSON(ctx, req, messageAt("errors.0.message", "error.message", "message"), &r); err != nil {
		return nil, err
	}
	if r.WebPages == nil { // no web results for this query, or no search reply
		return b.emptyReply(r.Type == "SearchResponse", "reply is not a SearchResponse")
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
