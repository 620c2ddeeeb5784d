package search

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Google searches Google Programmable Search (Custom Search JSON API): GET
// ?key=...&cx=...&q=...&num=N&start=S&lr=lang_xx; results are
// items[] {title, link, snippet}. The API gives at most 10 results a call,
// so larger n takes several calls.
type Google struct {
	providerBase
	cx string
}

// NewGoogle returns a Programmable Search client for engine o.CX.
func NewGoogle(o ProviderOptions) *Google {
	return &Google{newProvider(o, "google", GoogleEndpoint), o.CX}
}

// Search returns up to n (at most 30) results.
func (g *Google) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 30)
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	out := []Result{}
	for start := 1; len(out) < n; start += 10 {
		num := min(10, n-len(out))
		body, err := g.do(ctx, g.request(query, num, start), googleError)
		if err != nil {
			if len(out) > 0 {
				break
			}
			return nil, err
		}
		var r struct {
			Kind  string `json:"kind"`
			Items []struct {
				Title   string `json:"title"`
				Link    string `json:"link"`
				Snippet string `json:"snippet"`
			} `json:"items"`
		}
		if err := g.decode(body, &r); err != nil {
			return nil, err
		}
		for _, it := range r.Items {
			if it.Link == "" {
				continue
			}
			out = append(out, Result{Title: it.Title, URL: it.Link, Snippet: strings.Join(strings.Fields(it.Snippet), " "), Engine: g.name})
		}
		if len(r.Items) < num {
			break // no more results
		}
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func (g *Google) request(query string, num, start int) *http.Request {
	v := url.Values{"key": {g.key}, "cx": {g.cx}, "q": {query}, "num": {fmt.Sprint(num)}}
	if start > 1 {
		v.Set("start", fmt.Sprint(start))
	}
	if g.lang != "" {
		v.Set("lr", "lang_"+g.lang)
		v.Set("hl", g.lang)
	}
	return getRequest(g.endpoint, v)
}

// googleError reads Google's {"error": {code, message, status, details}}
// replies. A bad key is a 400 with reason API_KEY_INVALID; an exhausted
// daily quota is a 429 (or 403 with a rate-limit reason).
func googleError(status int, body []byte) (string, error) {
	msg := jsonMessage(body, "error.message", "error.errors.0.message")
	b := string(body)
	switch {
	case strings.Contains(b, "API_KEY_INVALID") || strings.Contains(b, "API key not valid") || jsonMessage(body, "error.status") == "UNAUTHENTICATED":
		return msg, ErrAuth
	case jsonMessage(body, "error.status") == "RESOURCE_EXHAUSTED" || strings.Contains(b, "rateLimitExceeded") || strings.Contains(b, "dailyLimitExceeded"):
		return msg, ErrQuota
	}
	return msg, nil
}
