package search

import (
	"context"
)

// Tavily searches the Tavily API: POST a JSON body {query, max_results,
// search_depth} with the key as a Bearer token; results are
// results[] {title, url, content, score}.
type Tavily struct{ providerBase }

// NewTavily returns a Tavily client.
func NewTavily(o ProviderOptions) *Tavily { return &Tavily{newProvider(o, "tavily", TavilyEndpoint)} }

// Search returns up to n (at most 20) results.
func (t *Tavily) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 5, 20)
	var r struct {
		Results []tavilyResult `json:"results"`
	}
	req := postJSON(t.endpoint, map[string]any{"query": query, "max_results": n, "search_depth": "basic", "topic": "general", "include_answer": false}, "Authorization", "Bearer "+t.key)
	if _, err := t.sendJSON(ctx, req, tavilyError, &r); err != nil {
		return nil, err
	}
	return firstResults(r.Results, n, func(x tavilyResult) Result {
		return Result{Title: x.Title, URL: x.URL, Snippet: x.Content, Engine: t.name, Score: x.Score, Published: x.PublishedDate}
	}), nil
}

type tavilyResult struct {
	Title         string  `json:"title"`
	URL           string  `json:"url"`
	Content       string  `json:"content"`
	Score         float64 `json:"score"`
	PublishedDate string  `json:"published_date"`
}

// tavilyError reads Tavily's {"detail": {"error": ...}} replies; 432 and
// 433 are its plan and pay-as-you-go usage limits.
func tavilyError(status int, body []byte) (string, error) {
	msg := jsonMessage(body, "detail.error", "detail", "error", "message")
	if status == 432 || status == 433 {
		return msg, ErrQuota
	}
	return msg, nil
}
