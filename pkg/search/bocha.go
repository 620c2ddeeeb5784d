package search

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Bocha searches the Bocha (博查) Web Search API, for deployments in China:
// POST a JSON body {query, freshness, summary, count} with the key as a
// Bearer token. The reply wraps a Bing-shaped SearchResponse:
// {code, msg, data: {webPages: {value: [{name, url, snippet, summary}]}}}.
type Bocha struct{ providerBase }

// NewBocha returns a Bocha client.
func NewBocha(o ProviderOptions) *Bocha { return &Bocha{newProvider(o, "bocha", BochaEndpoint)} }

// Search returns up to n (at most 50) results, with Bocha's longer summary
// as the snippet when it gives one.
func (b *Bocha) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 50)
	var r struct {
		Code json.Number `json:"code"`
		Msg  *string     `json:"msg"`
		Data *struct {
			WebPages *bingPages `json:"webPages"`
		} `json:"data"`
	}
	req := postJSON(b.endpoint, map[string]any{"query": query, "freshness": "noLimit", "summary": true, "count": n}, "Authorization", "Bearer "+b.key)
	body, err := b.sendJSON(ctx, req, bochaError, &r)
	if err != nil {
		return nil, err
	}
	// Bocha reports some failures in the body with HTTP 200.
	if c := r.Code.String(); c != "" && c != "200" {
		var status int
		fmt.Sscan(c, &status)
		msg, kind := bochaError(status, body)
		if kind == nil {
			kind = statusKind(status)
		}
		return nil, &ProviderError{Provider: b.name, Status: status, Kind: kind, Msg: msg}
	}
	if r.Data == nil {
		return nil, &ProviderError{Provider: b.name, Kind: ErrBadResponse, Msg: "reply has no data"}
	}
	if r.Data.WebPages == nil {
		return []Result{}, nil
	}
	return r.Data.WebPages.results(b.name, n), nil
}

// bochaError reads Bocha's {"code", "message"} replies: 403 means the
// balance is used up, 400 "The API KEY is missing" a missing key.
func bochaError(status int, body []byte) (string, error) {
	msg := jsonMessage(body, "message", "msg", "error")
	switch {
	case status == 403:
		return msg, ErrQuota
	case status == 400 && strings.Contains(strings.ToLower(msg), "api key"):
		return msg, ErrAuth
	}
	return msg, nil
}
