package search

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// SearxNG searches a SearxNG (or searx) instance through its JSON API:
// GET {base}/search?q=...&format=json&language=...&categories=...&pageno=N.
// The instance must allow the json format (SearxNG: search.formats in its
// settings.yml).
type SearxNG struct {
	providerBase
	base       string
	language   string
	categories string
}

// NewSearxNG returns a client for the instance at o.BaseURL.
func NewSearxNG(o ProviderOptions) *SearxNG {
	return &SearxNG{
		providerBase: newBase(o.Name, "searxng", o.Client, o.Timeout),
		base:         strings.TrimRight(o.BaseURL, "/"),
		language:     o.Language,
		categories:   strings.Join(o.Categories, ","),
	}
}

// searxPages is the most pages one Search reads to gather n results.
const searxPages = 3

// Search returns up to n results, reading further result pages while the
// first ones give fewer than n (searx returns about 10 a page).
func (s *SearxNG) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 50)
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	out := []Result{}
	seen := map[string]bool{}
	for page := 1; page <= searxPages && len(out) < n; page++ {
		rs, err := s.page(ctx, query, page)
		if err != nil {
			if page > 1 && len(out) > 0 {
				break // keep what the first pages gave
			}
			return nil, err
		}
		added := 0
		for _, r := range rs {
			if seen[r.URL] {
				continue
			}
			seen[r.URL] = true
			out = append(out, r)
			added++
		}
		if added == 0 {
			break
		}
	}
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// SearchPage returns the results of one result page (1-based).
func (s *SearxNG) SearchPage(ctx context.Context, query string, page int) ([]Result, error) {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	return s.page(ctx, query, page)
}

func (s *SearxNG) page(ctx context.Context, query string, page int) ([]Result, error) {
	req, err := s.request(query, page)
	if err != nil {
		return nil, err
	}
	body, err := s.do(ctx, req, searxError)
	if err != nil {
		return nil, err
	}
	rs, err := ParseSearxNG(body)
	if err != nil {
		return nil, &ProviderError{Provider: s.name, Kind: ErrBadResponse, Msg: err.Error(), Err: err}
	}
	for i := range rs {
		rs[i].Engine = s.name
	}
	return rs, nil
}

// request builds the GET request for one page.
func (s *SearxNG) request(query string, page int) (*http.Request, error) {
	v := url.Values{}
	v.Set("q", query)
	v.Set("format", "json")
	if s.language != "" {
		v.Set("language", s.language)
	}
	if s.categories != "" {
		v.Set("categories", s.categories)
	}
	if page > 1 {
		v.Set("pageno", fmt.Sprint(page))
	}
	req, err := http.NewRequest(http.MethodGet, s.base+"/search?"+v.Encode(), nil)
	if err != nil {
		return nil, &ProviderError{Provider: s.name, Kind: ErrBadResponse, Msg: "bad base_url", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// searxResponse is the part of searx's and SearxNG's JSON reply we read.
type searxResponse struct {
	Query   json.RawMessage `json:"query"`
	Results []struct {
		URL           string  `json:"url"`
		Title         string  `json:"title"`
		Content       string  `json:"content"`
		Engine        string  `json:"engine"`
		Score         float64 `json:"score"`
		PublishedDate *string `json:"publishedDate"`
	} `json:"results"`
	Answers []json.RawMessage `json:"answers"`
}

// ParseSearxNG parses a searx/SearxNG JSON reply into results, in the
// instance's order, skipping results without a URL.
func ParseSearxNG(body []byte) ([]Result, error) {
	var r searxResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("parse searxng reply: %w", err)
	}
	if r.Results == nil && r.Query == nil {
		return nil, fmt.Errorf("parse searxng reply: no results field")
	}
	out := make([]Result, 0, len(r.Results))
	for _, x := range r.Results {
		if x.URL == "" {
			continue
		}
		res := Result{
			Title:   strings.TrimSpace(stripTags(x.Title)),
			URL:     x.URL,
			Snippet: strings.TrimSpace(stripTags(x.Content)),
			Score:   x.Score,
		}
		if x.PublishedDate != nil {
			res.Published = *x.PublishedDate
		}
		if res.Title == "" {
			res.Title = x.URL
		}
		out = append(out, res)
	}
	return out, nil
}

// searxError reads searx's {"error": ...} replies. SearxNG answers 403 with
// an HTML page when the json format is not enabled, which is a setting, not
// a key problem; its limiter answers 429.
func searxError(status int, b []byte) (string, error) {
	if m := jsonMessage(b, "error"); m != "" {
		return m, nil
	}
	s := strings.ToLower(string(b))
	if strings.Contains(s, "<html") || strings.Contains(s, "<!doctype") {
		if status == http.StatusForbidden {
			return "the instance refuses the json format: add json to search.formats in its settings.yml", ErrBadResponse
		}
		return "the instance answered with an HTML page, not JSON", nil
	}
	return "", nil
}
