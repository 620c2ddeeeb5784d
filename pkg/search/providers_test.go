package search

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request a fake provider received.
type recorded struct {
	method, path string
	query        map[string][]string
	header       http.Header
	body         []byte
}

// fakeProvider serves a fixture from testdata with a status, and records
// the requests it gets.
type fakeProvider struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFakeProvider(t *testing.T, status int, fixture, contentType string) *fakeProvider {
	t.Helper()
	var body []byte
	if fixture != "" {
		var err error
		body, err = os.ReadFile(filepath.Join("testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
	}
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.Query(), r.Header.Clone(), b})
		f.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) last(t *testing.T) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("provider received no request")
	}
	return f.reqs[len(f.reqs)-1]
}

type providerCase struct {
	name    string
	fixture string
	ctype   string
	path    string // the endpoint path the test server is called at
	make    func(ProviderOptions) Searcher
	opts    ProviderOptions
	n       int
	request wantRequest
	want    []Result // Title, URL and Snippet compared
}

// wantRequest is what a provider's request must hold.
type wantRequest struct {
	method string            // "" means GET
	values map[string]string // query parameters, or the form of a form POST
	absent []string          // query parameters that must not be sent
	header map[string]string // a value ending in "*" is a prefix
	json   map[string]any    // fields of a JSON body (numbers as float64)
}

// check reports where r differs from w. The key never travels in a body.
func (w wantRequest) check(t *testing.T, r recorded, key string) {
	t.Helper()
	if m := cmp.Or(w.method, "GET"); r.method != m {
		t.Errorf("method %s, want %s", r.method, m)
	}
	values := url.Values(r.query)
	if strings.HasPrefix(r.header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		values, _ = url.ParseQuery(string(r.body))
	}
	for k, v := range w.values {
		if got := values.Get(k); got != v {
			t.Errorf("parameter %s = %q, want %q", k, got, v)
		}
	}
	for _, k := range w.absent {
		if values.Has(k) {
			t.Errorf("parameter %s sent though not configured: %v", k, values)
		}
	}
	for k, v := range w.header {
		got := r.header.Get(k)
		if prefix, ok := strings.CutSuffix(v, "*"); (ok && !strings.HasPrefix(got, prefix)) || (!ok && got != v) {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if w.json != nil {
		var body map[string]any
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("body %s: %v", r.body, err)
		}
		for k, v := range w.json {
			if body[k] != v {
				t.Errorf("body field %s = %v, want %v", k, body[k], v)
			}
		}
	}
	if key != "" && strings.Contains(string(r.body), key) {
		t.Error("key sent in the body")
	}
}

const (
	wikiTaiji  = "https://zh.wikipedia.org/wiki/%E5%A4%AA%E6%9E%81"
	wikiSource = "https://zh.wikisource.org/zh-hans/%E5%91%A8%E6%98%93/%E7%B9%AB%E8%BE%AD%E4%B8%8A"
	question   = "易有太极 两仪"
)

func providerCases() []providerCase {
	return []providerCase{
		{
			name: "searxng", fixture: "searxng.json", ctype: "application/json", path: "/search",
			make:    searcher(NewSearxNG),
			opts:    ProviderOptions{Language: "zh-CN", Categories: []string{"general", "science"}},
			n:       2,
			request: wantRequest{values: map[string]string{"q": question, "format": "json", "language": "zh-CN", "categories": "general,science"}},
			want: []Result{
				{Title: "太极 - 维基百科，自由的百科全书", URL: wikiTaiji, Snippet: "《易传·系辞上》：“易有太极，是生两仪，两仪生四象，四象生八卦。”"},
				{Title: "系辞上 - 维基文库", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象，四象生八卦，八卦定吉凶，吉凶生大业。"},
			},
		},
		{
			name: "searx 1.1 (recorded)", fixture: "searx_real_qian.json", ctype: "application/json", path: "/search",
			make:    searcher(NewSearxNG),
			n:       2,
			request: wantRequest{absent: []string{"language"}},
			want: []Result{
				{Title: "系辞传上·第一章", URL: "https://zhouyi.example/xici/shang-1", Snippet: "天尊地卑，乾坤定矣。卑高以陈，贵贱位矣。动静有常，刚柔断矣。"},
				{Title: "彖传·乾", URL: "https://zhouyi.example/tuan/qian", Snippet: "大哉乾元，万物资始，乃统天。云行雨施，品物流形。"},
			},
		},
		{
			name: "bing", fixture: "bing.json", ctype: "application/json; charset=utf-8", path: "/v7.0/search",
			make: searcher(NewBing),
			opts: ProviderOptions{APIKey: "bing-key", Language: "zh-CN"},
			n:    5,
			request: wantRequest{header: map[string]string{"Ocp-Apim-Subscription-Key": "bing-key"},
				values: map[string]string{"q": question, "count": "5", "mkt": "zh-CN", "responseFilter": "Webpages"}},
			want: []Result{
				{Title: "系辞上 - 维基文库，自由的图书馆", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象，四象生八卦，八卦定吉凶，吉凶生大业。"},
				{Title: "太极 - 维基百科，自由的百科全书", URL: wikiTaiji, Snippet: "太极是中国古代哲学用以说明世界本原的范畴。《易传·系辞上》：“易有太极，是生两仪。”"},
			},
		},
		{
			name: "brave", fixture: "brave.json", ctype: "application/json", path: "/res/v1/web/search",
			make: searcher(NewBrave),
			opts: ProviderOptions{APIKey: "brave-key", Language: "zh-hans"},
			n:    3,
			request: wantRequest{header: map[string]string{"X-Subscription-Token": "brave-key", "Accept": "application/json"},
				values: map[string]string{"q": question, "count": "3", "search_lang": "zh-hans"}},
			want: []Result{
				{Title: "太极 - 维基百科", URL: wikiTaiji, Snippet: "《易传·系辞上》：“易有太极，是生两仪，两仪生四象，四象生八卦。” … 太极是阐明宇宙从无极而太极，以至万物化生的过程。 … 两仪指阴阳。"},
				{Title: "周易·系辞上 & 注释", URL: "https://www.example-guoxue.cn/zhouyi/xici-shang.html", Snippet: "是故易有太极，是生两仪……"},
			},
		},
		{
			name: "tavily", fixture: "tavily.json", ctype: "application/json", path: "/search",
			make: searcher(NewTavily),
			opts: ProviderOptions{APIKey: "tvly-key"},
			n:    4,
			request: wantRequest{method: "POST", header: map[string]string{"Authorization": "Bearer tvly-key", "Content-Type": "application/json"},
				json: map[string]any{"query": question, "max_results": float64(4), "search_depth": "basic"}},
			want: []Result{
				{Title: "太极 - 维基百科，自由的百科全书", URL: wikiTaiji, Snippet: "太极是中国古代哲学用以说明世界本原的范畴。《易传·系辞上》：“易有太极，是生两仪，两仪生四象，四象生八卦。”"},
				{Title: "系辞上 - 维基文库", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象，四象生八卦，八卦定吉凶，吉凶生大业。"},
			},
		},
		{
			name: "google", fixture: "google.json", ctype: "application/json; charset=UTF-8", path: "/customsearch/v1",
			make:    searcher(NewGoogle),
			opts:    ProviderOptions{APIKey: "g-key", CX: "0123456789abcdef0", Language: "zh-CN"},
			n:       2,
			request: wantRequest{values: map[string]string{"key": "g-key", "cx": "0123456789abcdef0", "q": question, "num": "2", "lr": "lang_zh-CN"}},
			want: []Result{
				{Title: "太极- 维基百科，自由的百科全书", URL: wikiTaiji, Snippet: "《易传·系辞上》：“易有太极，是生两仪，两仪生四象， 四象生八卦。”"},
				{Title: "系辞上- 维基文库", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象，四象生八卦。"},
			},
		},
		{
			name: "bocha", fixture: "bocha.json", ctype: "application/json", path: "/v1/web-search",
			make: searcher(NewBocha),
			opts: ProviderOptions{APIKey: "sk-bocha"},
			n:    6,
			request: wantRequest{method: "POST", header: map[string]string{"Authorization": "Bearer sk-bocha"},
				json: map[string]any{"query": question, "count": float64(6), "freshness": "noLimit", "summary": true}},
			want: []Result{
				{Title: "易有太极,是生两仪,两仪生四象,四象生八卦", URL: "https://baike.example.cn/item/%E6%98%93%E6%9C%89%E5%A4%AA%E6%9E%81",
					Snippet: "“易有太极，是生两仪，两仪生四象，四象生八卦”出自《周易·系辞上》。太极指宇宙最初浑然一体的元气，两仪指天地或阴阳，四象指四时，八卦则是八种自然现象的象征。"},
				{Title: "系辞上 - 维基文库", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象，四象生八卦。"},
			},
		},
		{
			name: "duckduckgo", fixture: "duckduckgo.html", ctype: "text/html; charset=UTF-8", path: "/html/",
			make: searcher(NewDuckDuckGo),
			opts: ProviderOptions{Language: "cn-zh"},
			n:    5,
			request: wantRequest{method: "POST", header: map[string]string{"User-Agent": "Mozilla/5.0*", "Content-Type": "application/x-www-form-urlencoded"},
				values: map[string]string{"q": question, "kl": "cn-zh"}},
			want: []Result{ // the ad is skipped, the redirect link resolved
				{Title: "太极 - 维基百科，自由的百科全书", URL: wikiTaiji, Snippet: "《易传·系辞上》：“易有太极，是生两仪，两仪生四象，四象生八卦。”"},
				{Title: "系辞上 - 维基文库", URL: wikiSource, Snippet: "是故易有太极，是生两仪，两仪生四象， 四象生八卦。"},
			},
		},
	}
}

func TestProvidersParse(t *testing.T) {
	for _, c := range providerCases() {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeProvider(t, 200, c.fixture, c.ctype)
			o := c.opts
			o.Name = "engine-" + strings.Fields(c.name)[0]
			o.BaseURL = srv.URL + c.path
			if strings.HasPrefix(c.name, "searx") {
				o.BaseURL = srv.URL
			}
			rs, err := c.make(o).Search(context.Background(), question, c.n)
			if err != nil {
				t.Fatal(err)
			}
			r := srv.last(t)
			if r.path != c.path {
				t.Errorf("path %q, want %q", r.path, c.path)
			}
			if !strings.HasPrefix(r.header.Get("User-Agent"), "mixchat/") && !strings.HasPrefix(r.header.Get("User-Agent"), "Mozilla/") {
				t.Errorf("User-Agent %q", r.header.Get("User-Agent"))
			}
			c.request.check(t, r, c.opts.APIKey)
			if len(rs) != len(c.want) {
				t.Fatalf("got %d results, want %d: %+v", len(rs), len(c.want), rs)
			}
			for i, w := range c.want {
				g := rs[i]
				if g.Title != w.Title || g.URL != w.URL || g.Snippet != w.Snippet {
					t.Errorf("result %d:\n got  %q %q %q\n want %q %q %q", i, g.Title, g.URL, g.Snippet, w.Title, w.URL, w.Snippet)
				}
				if g.Engine != o.Name {
					t.Errorf("result %d engine %q, want %q", i, g.Engine, o.Name)
				}
			}
		})
	}
}

func TestProvidersLimitResults(t *testing.T) {
	for _, c := range providerCases() {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeProvider(t, 200, c.fixture, c.ctype)
			o := c.opts
			o.BaseURL = srv.URL + c.path
			if strings.HasPrefix(c.name, "searx") {
				o.BaseURL = srv.URL
			}
			rs, err := c.make(o).Search(context.Background(), "q", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 {
				t.Errorf("n=1 gave %d results", len(rs))
			}
		})
	}
}

func TestProviderErrors(t *testing.T) {
	type errCase struct {
		provider string
		make     func(ProviderOptions) Searcher
		status   int
		fixture  string
		kind     error
		msg      string
	}
	bing, brave, tavily := searcher(NewBing), searcher(NewBrave), searcher(NewTavily)
	google, bocha, searx := searcher(NewGoogle), searcher(NewBocha), searcher(NewSearxNG)
	cases := []errCase{
		{"bing", bing, 401, "bing_401.json", ErrAuth, "Access denied due to invalid subscription key"},
		{"bing", bing, 429, "bing_429.json", ErrQuota, "Rate limit is exceeded"},
		{"brave", brave, 422, "brave_422.json", ErrAuth, "SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid."},
		{"brave", brave, 429, "brave_429.json", ErrQuota, "Request rate limit exceeded for plan."},
		{"tavily", tavily, 401, "tavily_401.json", ErrAuth, "Unauthorized: missing or invalid API key."},
		{"tavily", tavily, 432, "tavily_432.json", ErrQuota, "exceeds your plan's set usage limit"},
		{"google", google, 400, "google_400_key.json", ErrAuth, "API key not valid."},
		{"google", google, 429, "google_429.json", ErrQuota, "Quota exceeded"},
		{"bocha", bocha, 401, "bocha_401.json", ErrAuth, "Invalid API KEY"},
		{"bocha", bocha, 403, "bocha_403.json", ErrQuota, "You do not have enough money"},
		{"bocha", bocha, 500, "", ErrBadResponse, ""},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+http.StatusText(c.status), func(t *testing.T) {
			srv := newFakeProvider(t, c.status, c.fixture, "application/json")
			_, err := c.make(ProviderOptions{Name: "my-" + c.provider, BaseURL: srv.URL, APIKey: "k", CX: "cx"}).Search(context.Background(), "q", 3)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ProviderError", err, err)
			}
			if pe.Provider != "my-"+c.provider || pe.Status != c.status || !errors.Is(err, c.kind) {
				t.Errorf("got provider %q status %d kind %v; want my-%s %d %v", pe.Provider, pe.Status, pe.Kind, c.provider, c.status, c.kind)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "my-"+c.provider) {
				t.Errorf("message %q should name the engine and contain %q", err, c.msg)
			}
		})
	}

	// Bocha also reports failures in a 200 body.
	t.Run("bocha/200 with error code", func(t *testing.T) {
		srv := newFakeProvider(t, 200, "bocha_401.json", "application/json")
		_, err := NewBocha(ProviderOptions{BaseURL: srv.URL, APIKey: "k"}).Search(context.Background(), "q", 3)
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "Invalid API KEY") {
			t.Errorf("got %v", err)
		}
	})
	// SearxNG without the json format enabled answers 403 with HTML.
	t.Run("searxng/json format off", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(403)
			io.WriteString(w, "<!doctype html><title>403 Forbidden</title><h1>Forbidden</h1>")
		}))
		defer srv.Close()
		_, err := searx(ProviderOptions{BaseURL: srv.URL}).Search(context.Background(), "q", 3)
		if errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "search.formats") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("duckduckgo/challenge", func(t *testing.T) {
		srv := newFakeProvider(t, 200, "duckduckgo_challenge.html", "text/html")
		_, err := NewDuckDuckGo(ProviderOptions{BaseURL: srv.URL}).Search(context.Background(), "q", 3)
		if !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "challenge") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>oops</html>") }))
		defer srv.Close()
		_, err := bing(ProviderOptions{BaseURL: srv.URL, APIKey: "k"}).Search(context.Background(), "q", 3)
		if !errors.Is(err, ErrBadResponse) {
			t.Errorf("got %v", err)
		}
	})
}

func TestProviderNoResults(t *testing.T) {
	cases := []struct {
		name, fixture string
		make          func(ProviderOptions) Searcher
	}{
		{"google", "google_empty.json", searcher(NewGoogle)},
		{"duckduckgo", "duckduckgo_noresults.html", searcher(NewDuckDuckGo)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeProvider(t, 200, c.fixture, "application/json")
			rs, err := c.make(ProviderOptions{BaseURL: srv.URL, APIKey: "k", CX: "cx"}).Search(context.Background(), "q", 3)
			if err != nil || rs == nil || len(rs) != 0 {
				t.Errorf("got %v, %v; want an empty list", rs, err)
			}
		})
	}
}

func TestProviderTimeoutAndUnreachable(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	_, err := NewBing(ProviderOptions{Name: "slowbing", BaseURL: slow.URL, APIKey: "k", Timeout: 50 * time.Millisecond}).Search(context.Background(), "q", 3)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "slowbing") {
		t.Errorf("timeout: got %v", err)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	addr := dead.URL
	dead.Close()
	_, err = NewSearxNG(ProviderOptions{Name: "gone", BaseURL: addr}).Search(context.Background(), "q", 3)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "gone") {
		t.Errorf("unreachable: got %v", err)
	}

	// A caller's cancellation is not a provider failure.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewBing(ProviderOptions{BaseURL: slow.URL, APIKey: "k"}).Search(ctx, "q", 3)
	var pe *ProviderError
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Errorf("cancelled: got %v", err)
	}
}

func TestSearxNGPaging(t *testing.T) {
	page := func(n int) string {
		var rs []string
		for i := 0; i < 3; i++ {
			rs = append(rs, `{"url":"https://example.com/`+string(rune('a'+n))+string(rune('0'+i))+`","title":"t","content":"c"}`)
		}
		return `{"query":"q","results":[` + strings.Join(rs, ",") + `]}`
	}
	var pages []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("pageno")
		mu.Lock()
		pages = append(pages, p)
		mu.Unlock()
		n := 1
		if p == "2" {
			n = 2
		}
		io.WriteString(w, page(n))
	}))
	defer srv.Close()
	rs, err := NewSearxNG(ProviderOptions{BaseURL: srv.URL}).Search(context.Background(), "q", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 || strings.Join(pages, ",") != ",2" {
		t.Errorf("got %d results from pages %q; want 5 from the first two pages", len(rs), pages)
	}
}

// TestGooglePaging: the Custom Search API gives at most 10 results a call,
// so 15 take a second call starting at result 11.
func TestGooglePaging(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		calls = append(calls, q.Get("num")+"@"+q.Get("start"))
		mu.Unlock()
		start := 1
		if s := q.Get("start"); s != "" {
			start = int(s[0]-'0')*10 + int(s[1]-'0')
		}
		var num int
		fmt.Sscan(q.Get("num"), &num)
		var items []string
		for i := 0; i < num; i++ {
			items = append(items, fmt.Sprintf(`{"kind":"customsearch#result","title":"r%d","link":"https://example.com/%d","snippet":"s"}`, start+i, start+i))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"customsearch#search","items":[%s]}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	rs, err := NewGoogle(ProviderOptions{BaseURL: srv.URL, APIKey: "k", CX: "cx"}).Search(context.Background(), "q", 15)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 15 || rs[10].URL != "https://example.com/11" || strings.Join(calls, ",") != "10@,5@11" {
		t.Errorf("%d results, calls %v", len(rs), calls)
	}
}
