package search

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// HTTPDoer sends HTTP requests; *http.Client satisfies it. Providers take one
// so tests and deployments can supply their own transport.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// ProviderOptions configure a remote provider's client.
type ProviderOptions struct {
	Name       string        // engine name for errors and results; "" means the provider's name
	BaseURL    string        // endpoint; "" means the provider's public endpoint (required for searxng)
	APIKey     string        // the provider's key
	CX         string        // google: the Programmable Search engine id
	Language   string        // language or market, e.g. "zh-CN"; "" means the provider's default
	Categories []string      // searxng categories
	Client     HTTPDoer      // nil means http.DefaultClient
	Timeout    time.Duration // one search; 0 means 10s
}

// maxResponseBytes bounds what a provider's reply may weigh.
const maxResponseBytes = 8 << 20

// defaultProviderTimeout bounds one search when the engine sets none.
const defaultProviderTimeout = 10 * time.Second

// apiUserAgent is sent to search APIs.
const apiUserAgent = "mixchat/1.0 (+https://github.com/mixchat/mixchat)"

// The public endpoints of the remote providers, used when an engine sets no
// base_url.
const (
	BingEndpoint       = "https://api.bing.microsoft.com/v7.0/search"     // Bing Web Search API v7
	BraveEndpoint      = "https://api.search.brave.com/res/v1/web/search" // Brave Search web search
	TavilyEndpoint     = "https://api.tavily.com/search"                  // Tavily search
	GoogleEndpoint     = "https://www.googleapis.com/customsearch/v1"     // Google Programmable Search (Custom Search JSON API)
	BochaEndpoint      = "https://api.bochaai.com/v1/web-search"          // Bocha (博查) web search
	DuckDuckGoEndpoint = "https://html.duckduckgo.com/html/"              // DuckDuckGo's HTML (no-JavaScript) search page
)

// providerBase holds what every remote provider shares: its name for
// errors, the HTTP client, the timeout of one search, and the endpoint,
// key and language (or market, or region) it searches with.
type providerBase struct {
	name                string
	client              HTTPDoer
	timeout             time.Duration
	endpoint, key, lang string
}

func newBase(name, defaultName string, client HTTPDoer, timeout time.Duration) providerBase {
	if name == "" {
		name = defaultName
	}
	if client == nil {
		client = http.DefaultClient
	}
	if timeout <= 0 {
		timeout = defaultProviderTimeout
	}
	return providerBase{name: name, client: client, timeout: timeout}
}

// newProvider is newBase for the options of a provider called provider,
// with the endpoint o.BaseURL, or def when that is empty.
func newProvider(o ProviderOptions, provider, def string) providerBase {
	p := newBase(o.Name, provider, o.Client, o.Timeout)
	p.endpoint, p.key, p.lang = cmp.Or(o.BaseURL, def), o.APIKey, o.Language
	return p
}

// emptyReply answers a reply without its results part: no results when
// the reply is of the expected type (ok), else ErrBadResponse saying why.
func (p providerBase) emptyReply(ok bool, why string) ([]Result, error) {
	if !ok {
		return nil, &ProviderError{Provider: p.name, Kind: ErrBadResponse, Msg: why}
	}
	return []Result{}, nil
}

// params are query parameters from name and value pairs, leaving out the
// empty values.
func params(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v
}

// Name returns the engine's name as used in errors and results.
func (p providerBase) Name() string { return p.name }

// errorInfo reads a provider's error reply: its own message, and the kind
// of failure when the status alone does not tell (nil: by status).
type errorInfo func(status int, body []byte) (msg string, kind error)

// messageAt is an errorInfo taking the message from the first of paths
// (see jsonMessage) and the kind from the status.
func messageAt(paths ...string) errorInfo {
	return func(_ int, body []byte) (string, error) { return jsonMessage(body, paths...), nil }
}

// do sends req and returns the body of a 2xx reply. Every failure comes back
// as a *ProviderError, with info reading the provider's error reply; a
// cancelled ctx comes back as ctx.Err(), wrapped.
func (p providerBase) do(ctx context.Context, req *http.Request, info errorInfo) ([]byte, error) {
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", apiUserAgent)
	}
	resp, err := p.client.Do(req.WithContext(ctx))
	if err != nil {
		return nil, p.transportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, p.transportError(ctx, err)
	}
	if len(body) > maxResponseBytes {
		return nil, &ProviderError{Provider: p.name, Status: resp.StatusCode, Kind: ErrBadResponse, Msg: fmt.Sprintf("reply larger than %d bytes", maxResponseBytes)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var m string
		var kind error
		if info != nil {
			m, kind = info(resp.StatusCode, body)
		}
		if m == "" {
			m = bodyExcerpt(body)
		}
		if kind == nil {
			kind = statusKind(resp.StatusCode)
		}
		return nil, &ProviderError{Provider: p.name, Status: resp.StatusCode, Kind: kind, Msg: m}
	}
	return body, nil
}

// sendJSON sends req (a GET or a POST) within the provider's timeout and
// decodes its 2xx JSON reply into v, returning the raw reply too. Failures
// are those of do and decode.
func (p providerBase) sendJSON(ctx context.Context, req *http.Request, info errorInfo, v any) ([]byte, error) {
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	body, err := p.do(ctx, req, info)
	if err != nil {
		return nil, err
	}
	return body, p.decode(body, v)
}

// getRequest builds a GET of endpoint with the query v, accepting JSON, with
// the given header name and value pairs.
func getRequest(endpoint string, v url.Values, header ...string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, endpoint+sep(endpoint)+v.Encode(), nil)
	req.Header.Set("Accept", "application/json")
	return withHeader(req, header)
}

// postJSON builds a POST of body, as JSON, to endpoint with the given header
// name and value pairs.
func postJSON(endpoint string, body any, header ...string) *http.Request {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	return withHeader(req, header)
}

func withHeader(req *http.Request, header []string) *http.Request {
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// sep is the separator before a query string appended to endpoint.
func sep(endpoint string) string {
	if strings.Contains(endpoint, "?") {
		return "&"
	}
	return "?"
}

// firstResults converts items with conv, skips the results without a URL and
// stops at n.
func firstResults[T any](items []T, n int, conv func(T) Result) []Result {
	out := []Result{}
	for _, it := range items {
		r := conv(it)
		if r.URL == "" {
			continue
		}
		out = append(out, r)
		if len(out) == n {
			break
		}
	}
	return out
}

// decode unmarshals a provider's JSON reply into v.
func (p providerBase) decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &ProviderError{Provider: p.name, Kind: ErrBadResponse, Msg: "reply is not the expected JSON: " + err.Error(), Err: err}
	}
	return nil
}

func (p providerBase) transportError(ctx context.Context, err error) error {
	if ctx.Err() == context.Canceled {
		return fmt.Errorf("search engine %s: %w", p.name, ctx.Err())
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &ProviderError{Provider: p.name, Kind: ErrTimeout, Msg: fmt.Sprintf("no reply within %s", p.timeout), Err: err}
	}
	return &ProviderError{Provider: p.name, Kind: ErrUnreachable, Err: err}
}

// statusKind classifies an HTTP error status.
func statusKind(status int) error {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ErrAuth
	case http.StatusTooManyRequests, http.StatusPaymentRequired:
		return ErrQuota
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return ErrTimeout
	}
	return ErrBadResponse
}

// bodyExcerpt is the start of an error body, on one line.
func bodyExcerpt(body []byte) string {
	s := strings.Join(strings.Fields(stripTags(string(body))), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// jsonMessage extracts an error message from a JSON error body by trying
// the given paths (dot-separated keys; "0" indexes an array) in order.
func jsonMessage(body []byte, paths ...string) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for _, p := range paths {
		cur := v
		for _, k := range strings.Split(p, ".") {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[k]
			case []any:
				if k == "0" && len(c) > 0 {
					cur = c[0]
				} else {
					cur = nil
				}
			default:
				cur = nil
			}
		}
		if s, ok := cur.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// stripTags turns a snippet with inline markup (<strong>, <b>, &amp;) into
// plain text.
func stripTags(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	return html.UnescapeString(tagRE.ReplaceAllString(s, ""))
}

// withTimeout bounds one search by the provider's timeout.
func (p providerBase) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

// clamp returns n limited to [1, max], with def for n <= 0.
func clamp(n, def, max int) int {
	if n <= 0 {
		n = def
	}
	if n > max {
		n = max
	}
	return n
}
