package search

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// TavilyEndpoint is the Tavily search endpoint.
const TavilyEndpoint = "https://api.tavily.com/search"

// Tavily searches the Tavily API: POST a JSON body {query, max_results,
// search_depth} with the key as a Bearer token; results are
// results[] {title, url, content, score}.
type Tavily struct {
	providerBase
	endpoint, key string
}

// NewTavily returns a Tavily client.
func NewTavily(o ProviderOptions) *Tavily {
	ep := o.BaseURL
	if ep == "" {
		ep = TavilyEndpoint
	}
	return &Tavily{providerBase: newBase(o.Name, "tavily", o.Client, o.Timeout), endpoint: ep, key: o.APIKey}
}

type tavilyRequest struct {
	Query         string `json:"query"`
	MaxResults    int    `json:"max_results"`
	SearchDepth   string `json:"search_depth"`
	Topic         string `json:"topic"`
	IncludeAnswer bool   `json:"include_answer"`
}

// Search returns up to n (at most 20) results.
func (t *Tavily) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 5, 20)
	ctx, cancel := t.withTimeout(ctx)
	defer cancel()
	b, _ := json.Marshal(tavilyRequest{Query: query, MaxResults: n, SearchDepth: "basic", Topic: "general"})
	req, _ := http.NewRequest(http.MethodPost, t.endpoint, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.key)
	body, err := t.do(ctx, req, tavilyError)
	if err != nil {
		return nil, err
	}
	var r struct {
		Results []struct {
			Title         string  `json:"title"`
			URL           string  `json:"url"`
			Content       string  `json:"content"`
			Score         float64 `json:"score"`
			PublishedDate string  `json:"published_date"`
		} `json:"results"`
	}
	if err := t.decode(body, &r); err != nil {
		return nil, err
	}
	out := []Result{}
	for _, x := range r.Results {
		if x.URL == "" {
			continue
		}
		out = append(out, Result{Title: x.Title, URL: x.URL, Snippet: x.Content, Engine: t.name, Score: x.Score, Published: x.PublishedDate})
		if len(out) == n {
			break
		}
	}
	return out, nil
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
