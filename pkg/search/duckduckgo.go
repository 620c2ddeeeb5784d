package search

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// duckUserAgent is a browser's: the HTML endpoint turns other agents away.
const duckUserAgent = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// DuckDuckGo searches DuckDuckGo's HTML endpoint, which needs no key: POST
// the form q=...&kl=region and read the result list (div.result, a.result__a,
// .result__snippet) with goquery. Ads are skipped and DuckDuckGo's redirect
// links (/l/?uddg=...) are resolved to their targets. It is a web page, not
// an API: DuckDuckGo may change it or answer with a challenge page, which
// comes back as a ProviderError of kind ErrQuota.
type DuckDuckGo struct{ providerBase }

// NewDuckDuckGo returns a DuckDuckGo client; o.Language is the region
// (kl), e.g. "cn-zh" or "wt-wt".
func NewDuckDuckGo(o ProviderOptions) *DuckDuckGo {
	return &DuckDuckGo{newProvider(o, "duckduckgo", DuckDuckGoEndpoint)}
}

// Search returns up to n results of the first result page (about 30).
func (d *DuckDuckGo) Search(ctx context.Context, query string, n int) ([]Result, error) {
	n = clamp(n, 10, 30)
	ctx, cancel := d.withTimeout(ctx)
	defer cancel()
	body, err := d.do(ctx, d.request(query), nil)
	if err != nil {
		return nil, err
	}
	rs, err := ParseDuckDuckGo(body)
	if err != nil {
		kind := ErrBadResponse
		if errors.As(err, new(duckChallengeError)) {
			kind = ErrQuota
		}
		return nil, &ProviderError{Provider: d.name, Kind: kind, Msg: err.Error(), Err: err}
	}
	for i := range rs {
		rs[i].Engine = d.name
	}
	if len(rs) > n {
		rs = rs[:n]
	}
	return rs, nil
}

func (d *DuckDuckGo) request(query string) *http.Request {
	v := url.Values{}
	v.Set("q", query)
	v.Set("b", "")
	if d.lang != "" {
		v.Set("kl", d.lang)
	}
	req, _ := http.NewRequest(http.MethodPost, d.endpoint, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", duckUserAgent)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Referer", "https://html.duckduckgo.com/")
	return req
}

// duckChallengeError is returned for DuckDuckGo's bot challenge page.
type duckChallengeError struct{}

func (duckChallengeError) Error() string {
	return "DuckDuckGo answered with its bot challenge instead of results (too many requests from this address)"
}

// ParseDuckDuckGo parses DuckDuckGo's HTML result page. A page without
// results gives an empty list; the bot challenge page gives an error.
func ParseDuckDuckGo(body []byte) ([]Result, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if doc.Find(".anomaly-modal__title, #challenge-form, form[action*='anomaly']").Length() > 0 {
		return nil, duckChallengeError{}
	}
	out := []Result{}
	doc.Find("div.result").Each(func(_ int, s *goquery.Selection) {
		if s.HasClass("result--ad") || s.HasClass("result--no-result") {
			return
		}
		a := s.Find("a.result__a").First()
		href, _ := a.Attr("href")
		u := duckTarget(href)
		if u == "" {
			return
		}
		title := strings.Join(strings.Fields(a.Text()), " ")
		snip := strings.Join(strings.Fields(s.Find(".result__snippet").First().Text()), " ")
		if title == "" {
			title = u
		}
		out = append(out, Result{Title: title, URL: u, Snippet: snip})
	})
	return out, nil
}

// duckTarget resolves DuckDuckGo's redirect link to the result's address
// and drops its ad links.
func duckTarget(href string) string {
	if href == "" {
		return ""
	}
	if strings.HasPrefix(href, "//") {
		href = "https:" + href
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if strings.HasSuffix(u.Host, "duckduckgo.com") {
		if u.Path == "/y.js" { // an ad
			return ""
		}
		if t := u.Query().Get("uddg"); t != "" {
			return t
		}
		return ""
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	return u.String()
}
