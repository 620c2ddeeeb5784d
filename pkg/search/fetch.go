package search

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/sync/singleflight"

	"github.com/mixchat/mixchat/pkg/htmltext"
)

// Page is the readable content of a fetched page.
type Page struct {
	URL         string `json:"url"` // the final address, after redirects
	Title       string `json:"title,omitempty"`
	Text        string `json:"text"` // main text, plain, one paragraph a line
	ContentType string `json:"content_type"`
	Truncated   bool   `json:"truncated,omitempty"` // the body was cut at the size limit
}

// Errors of Fetch, matched with errors.Is.
var (
	ErrUnsupportedContent = errors.New("not an HTML or text page")
	ErrPageTooLarge       = errors.New("page larger than the size limit")
	ErrNoText             = errors.New("no readable text")
)

// FetchError is a page that could not be read.
type FetchError struct {
	URL    string
	Status int // HTTP status, when the server answered
	Err    error
}

func (e *FetchError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("read %s: status %d: %v", e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("read %s: %v", e.URL, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// errStatus is the Err of a FetchError for an HTTP error status.
var errStatus = errors.New("server answered with an error")

// Fetcher reads web pages and extracts their main text (readability): with
// a timeout and size limit per page, a limit on pages read at once, a cache
// of read pages, and an SSRF guard (see Guard) on every connection,
// redirects included. It is safe for concurrent use.
type Fetcher struct {
	client    *http.Client
	guard     *Guard
	cfg       FetchConfig
	sem       chan struct{}
	now       func() time.Time
	flight    singleflight.Group
	mu        sync.Mutex
	cache     map[string]cacheEntry
	cacheKeys []string // insertion order, for eviction
}

type cacheEntry struct {
	page    Page
	expires time.Time
}

// positiveOr returns v when it is above zero, else def.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// maxRedirects bounds a page's redirect chain.
const maxRedirects = 5

// NewFetcher returns a fetcher for c; zero sizes and limits take their
// defaults (see FetchConfig).
func NewFetcher(c FetchConfig) (*Fetcher, error) {
	d := DefaultConfig().Fetch
	c.Timeout, c.CacheSize = positiveOr(c.Timeout, d.Timeout), positiveOr(c.CacheSize, d.CacheSize)
	c.MaxBytes, c.Concurrency = positiveOr(c.MaxBytes, d.MaxBytes), positiveOr(c.Concurrency, d.Concurrency)
	c.MaxPages, c.Passages = positiveOr(c.MaxPages, d.MaxPages), positiveOr(c.Passages, d.Passages)
	c.PassageChars = positiveOr(c.PassageChars, d.PassageChars)
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	g := &Guard{AllowAll: c.AllowPrivate}
	for _, n := range c.AllowNetworks {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, fmt.Errorf("fetch: allow_networks: %w", err)
		}
		g.Allow = append(g.Allow, p)
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Control: g.Control}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would hide the real destination from the guard
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: c.Timeout,
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if err := checkPageURL(req.URL, g); err != nil {
				return err
			}
			return nil
		},
	}
	return &Fetcher{
		client: client,
		guard:  g,
		cfg:    c,
		sem:    make(chan struct{}, c.Concurrency),
		now:    time.Now,
		cache:  map[string]cacheEntry{},
	}, nil
}

// checkPageURL accepts http(s) addresses whose host, when it is a literal
// IP, passes the guard (names are checked at connection time).
func checkPageURL(u *url.URL, g *Guard) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (only http and https pages are read)", ErrUnsupportedContent, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("no host in %q", u.String())
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		return g.Check(a)
	}
	return nil
}

// Fetch reads the page at rawURL and extracts its main text. HTML goes
// through readability; text/plain and text/markdown are taken as they are;
// other content types fail with ErrUnsupportedContent. Successful reads are
// cached for CacheTTL. Errors are *FetchError values.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (Page, error) {
	if p, ok := f.cached(rawURL); ok {
		return p, nil
	}
	// Callers asking for the same page at once share one read. The read
	// does not stop when the caller that started it goes away (another may
	// still wait for it): waiting for a free reader and the read itself are
	// each bounded by the page timeout instead, and each caller stops
	// waiting when its own ctx ends.
	if err := ctx.Err(); err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	rctx := context.WithoutCancel(ctx)
	ch := f.flight.DoChan(rawURL, func() (any, error) {
		wait, cancel := context.WithTimeout(rctx, f.cfg.Timeout)
		defer cancel()
		select {
		case f.sem <- struct{}{}:
		case <-wait.Done():
			return Page{}, fmt.Errorf("no free reader within %s: %w", f.cfg.Timeout, wait.Err())
		}
		defer func() { <-f.sem }()
		p, err := f.fetch(rctx, rawURL) // fetch applies the page timeout
		if err == nil {
			f.store(rawURL, p)
		}
		return p, err
	})
	var v any
	var err error
	select {
	case r := <-ch:
		v, err = r.Val, r.Err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		var fe *FetchError
		if !errors.As(err, &fe) {
			err = &FetchError{URL: rawURL, Err: err}
		}
		return Page{}, err
	}
	return v.(Page), nil
}

func (f *Fetcher) fetch(ctx context.Context, rawURL string) (Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	if err := checkPageURL(u, f.guard); err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,*/*;q=0.1")
	req.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
	resp, err := f.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the cause, without repeating the address
		}
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Page{}, &FetchError{URL: rawURL, Status: resp.StatusCode, Err: errStatus}
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return Page{}, &FetchError{URL: rawURL, Err: fmt.Errorf("%w: %d bytes declared, limit %d", ErrPageTooLarge, resp.ContentLength, f.cfg.MaxBytes)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	truncated := int64(len(body)) > f.cfg.MaxBytes
	if truncated {
		body = body[:f.cfg.MaxBytes]
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, _ := mime.ParseMediaType(ct)
	page := Page{URL: final.String(), ContentType: mt, Truncated: truncated}
	utf8Body, err := toUTF8(body, ct)
	if err != nil {
		return Page{}, &FetchError{URL: rawURL, Err: err}
	}
	switch mt {
	case "text/html", "application/xhtml+xml":
		page.Title, page.Text = extractHTML(utf8Body, final)
	case "text/plain", "text/markdown", "text/x-markdown":
		page.Text = tidyText(string(utf8Body))
		page.Title = firstLine(page.Text)
	default:
		return Page{}, &FetchError{URL: rawURL, Err: fmt.Errorf("%w: %s", ErrUnsupportedContent, mt)}
	}
	if page.Text == "" {
		return Page{}, &FetchError{URL: rawURL, Err: ErrNoText}
	}
	return page, nil
}

// toUTF8 decodes body by the charset the header or the page declares (GBK
// and Big5 pages are common in Chinese).
func toUTF8(body []byte, contentType string) ([]byte, error) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return body, nil // unknown charset: take the bytes as they are
	}
	return io.ReadAll(r)
}

// extractHTML returns the title and main text of an HTML page: readability's
// article when it finds one, else the text of the whole body.
func extractHTML(body []byte, u *url.URL) (title, txt string) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return "", ""
	}
	title = htmltext.Title(doc)
	art, err := readability.FromDocument(doc, u)
	if err == nil && art.Node != nil {
		txt = htmlText(art.Node)
		if t := art.Title(); t != "" {
			title = t
		}
	}
	if txt == "" {
		// readability changes the tree it reads; parse again for the
		// fallback.
		if doc, err = html.Parse(bytes.NewReader(body)); err == nil {
			txt = htmlText(doc)
		}
	}
	return strings.TrimSpace(title), txt
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	l = strings.TrimLeft(l, "# ")
	if r := []rune(l); len(r) > 80 {
		l = string(r[:80])
	}
	return l
}

func (f *Fetcher) cached(u string) (Page, bool) {
	if f.cfg.CacheTTL <= 0 {
		return Page{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.cache[u]
	if !ok || f.now().After(e.expires) {
		return Page{}, false
	}
	return e.page, true
}

func (f *Fetcher) store(u string, p Page) {
	if f.cfg.CacheTTL <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.cache[u]; !ok {
		f.cacheKeys = append(f.cacheKeys, u)
	}
	f.cache[u] = cacheEntry{page: p, expires: f.now().Add(f.cfg.CacheTTL)}
	for len(f.cache) > f.cfg.CacheSize && len(f.cacheKeys) > 0 {
		delete(f.cache, f.cacheKeys[0])
		f.cacheKeys = f.cacheKeys[1:]
	}
}

// FetchAll reads the pages at urls, at most Concurrency at once, and returns
// them in the same order with an error per page (nil when read).
func (f *Fetcher) FetchAll(ctx context.Context, urls []string) ([]Page, []error) {
	pages := make([]Page, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { pages[i], errs[i] = f.Fetch(ctx, u) })
	}
	wg.Wait()
	return pages, errs
}
