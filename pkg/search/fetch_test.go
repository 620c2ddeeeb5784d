package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestGuardCheck(t *testing.T) {
	cases := []struct {
		addr    string
		blocked bool
		reason  string
	}{
		{"93.184.216.34", false, ""},
		{"2606:2800:220:1:248:1893:25c8:1946", false, ""},
		{"8.8.8.8", false, ""},
		{"127.0.0.1", true, "loopback"},
		{"127.9.9.9", true, "loopback"},
		{"::1", true, "loopback"},
		{"10.1.2.3", true, "private"},
		{"172.16.0.1", true, "private"},
		{"172.31.255.255", true, "private"},
		{"172.32.0.1", false, ""},
		{"192.168.1.1", true, "private"},
		{"fd12:3456::1", true, "private"},
		{"169.254.1.1", true, "link-local"},
		{"fe80::1", true, "link-local"},
		{"169.254.169.254", true, "cloud metadata"},
		{"fd00:ec2::254", true, "cloud metadata"},
		{"100.100.100.200", true, "cloud metadata"},
		{"100.64.0.1", true, "carrier-grade NAT"},
		{"100.127.255.254", true, "carrier-grade NAT"},
		{"100.128.0.1", false, ""},
		{"0.0.0.0", true, "unspecified"},
		{"::", true, "unspecified"},
		{"224.0.0.1", true, "multicast"},
		{"255.255.255.255", true, "reserved"},
		{"::ffff:127.0.0.1", true, "loopback"}, // IPv4-mapped
		{"::ffff:169.254.169.254", true, "cloud metadata"},
		{"64:ff9b::a9fe:a9fe", true, "cloud metadata (via NAT64)"},
		{"2002:0a00:0001::1", true, "private (via 6to4)"},
		{"64:ff9b::808:808", false, ""},
		{"::7f00:1", true, "IPv4-compatible (deprecated)"}, // ::127.0.0.1
		{"64:ff9b:1::a00:1", true, "private (local-use NAT64)"},
	}
	var g Guard
	for _, c := range cases {
		err := g.Check(netip.MustParseAddr(c.addr))
		var be *BlockedAddressError
		switch {
		case !c.blocked && err != nil:
			t.Errorf("%s blocked: %v", c.addr, err)
		case c.blocked && !errors.As(err, &be):
			t.Errorf("%s allowed, want blocked as %s", c.addr, c.reason)
		case c.blocked && be.Reason != c.reason:
			t.Errorf("%s blocked as %q, want %q", c.addr, be.Reason, c.reason)
		case c.blocked && !errors.Is(err, ErrBlockedAddress):
			t.Errorf("%s: errors.Is(ErrBlockedAddress) false", c.addr)
		}
	}
	allow := Guard{Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	if err := allow.Check(netip.MustParseAddr("10.1.2.3")); err != nil {
		t.Errorf("allowed network blocked: %v", err)
	}
	if err := allow.Check(netip.MustParseAddr("10.2.0.1")); err == nil {
		t.Error("network outside the allowance let through")
	}
	if err := (&Guard{AllowAll: true}).Check(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("AllowAll blocked: %v", err)
	}
}

// pageServer serves the pages of a small site on loopback.
func pageServer(t *testing.T, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>系辞上 · 第十一章</title></head><body>
<nav><a href="/">首页</a> <a href="/list">目录</a></nav>
<article><h1>系辞上 · 第十一章</h1>
<p>子曰：夫易何为者也？夫易开物成务，冒天下之道，如斯而已者也。是故圣人以通天下之志，以定天下之业，以断天下之疑。</p>
<p>是故易有太极，是生两仪，两仪生四象，四象生八卦，八卦定吉凶，吉凶生大业。是故法象莫大乎天地，变通莫大乎四时。</p>
<p>县象著明莫大乎日月，崇高莫大乎富贵。备物致用，立成器以为天下利，莫大乎圣人。</p>
</article><footer>版权所有</footer><script>var x = "太极";</script></body></html>`)
	})
	mux.HandleFunc("/gbk", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=gbk")
		// "<p>太极生两仪</p>" in GBK.
		w.Write([]byte("<html><body><p>\xcc\xab\xbc\xab\xc9\xfa\xc1\xbd\xd2\xc7</p></body></html>"))
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "天行健，君子以自强不息。\n地势坤，君子以厚德载物。")
	})
	mux.HandleFunc("/pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		io.WriteString(w, "%PDF-1.7 ...")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "5000000")
		w.Write([]byte(strings.Repeat("a", 1000)))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := 0; i < 100; i++ { // 100 × 1000 bytes, no Content-Length
			io.WriteString(w, strings.Repeat("字", 333)+"\n")
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// loopbackFetcher reads pages from 127.0.0.1 (the test server) and guards
// everything else.
func loopbackFetcher(t *testing.T, mod func(*FetchConfig)) *Fetcher {
	t.Helper()
	c := DefaultConfig().Fetch
	c.Enabled = true
	c.AllowNetworks = []string{"127.0.0.1/32"}
	c.Timeout = 2 * time.Second
	if mod != nil {
		mod(&c)
	}
	f, err := NewFetcher(c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFetchExtractsMainText(t *testing.T) {
	srv := pageServer(t, nil)
	f := loopbackFetcher(t, nil)
	ctx := context.Background()

	p, err := f.Fetch(ctx, srv.URL+"/article")
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "系辞上 · 第十一章" || !strings.Contains(p.Text, "是故易有太极，是生两仪") || p.ContentType != "text/html" {
		t.Errorf("page %+v", p)
	}
	for _, junk := range []string{"首页", "版权所有", "var x"} {
		if strings.Contains(p.Text, junk) {
			t.Errorf("main text keeps %q: %q", junk, p.Text)
		}
	}
	if lines := strings.Split(p.Text, "\n"); len(lines) < 3 {
		t.Errorf("paragraphs not kept apart: %q", p.Text)
	}

	if p, err := f.Fetch(ctx, srv.URL+"/gbk"); err != nil || !strings.Contains(p.Text, "太极生两仪") {
		t.Errorf("GBK page: %q, %v", p.Text, err)
	}
	if p, err := f.Fetch(ctx, srv.URL+"/plain"); err != nil || p.Text != "天行健，君子以自强不息。\n地势坤，君子以厚德载物。" || p.ContentType != "text/plain" {
		t.Errorf("plain text: %+v, %v", p, err)
	}
}

func TestFetchRefuses(t *testing.T) {
	srv := pageServer(t, nil)
	f := loopbackFetcher(t, func(c *FetchConfig) { c.MaxBytes = 10000; c.Timeout = 200 * time.Millisecond })
	ctx := context.Background()
	cases := []struct {
		path string
		want error
	}{
		{"/pdf", ErrUnsupportedContent},
		{"/big", ErrPageTooLarge},
		{"/slow", context.DeadlineExceeded},
		{"/missing", errStatus},
	}
	for _, c := range cases {
		_, err := f.Fetch(ctx, srv.URL+c.path)
		var fe *FetchError
		if !errors.Is(err, c.want) || !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want %v in a *FetchError", c.path, err, c.want)
		}
	}
	if _, err := f.Fetch(ctx, "ftp://example.com/file.txt"); !errors.Is(err, ErrUnsupportedContent) {
		t.Errorf("ftp: %v", err)
	}
	// A body without a declared length is cut at the limit, not refused.
	p, err := f.Fetch(ctx, srv.URL+"/stream")
	if err != nil || !p.Truncated || len(p.Text) > 10000 || len(p.Text) < 9000 {
		t.Errorf("stream: truncated %v, %d bytes, %v", p.Truncated, len(p.Text), err)
	}
}

func TestFetchSSRFGuard(t *testing.T) {
	srv := pageServer(t, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	// The default guard refuses the loopback test server, by address and by
	// a name that resolves to it.
	guarded, err := NewFetcher(FetchConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{srv.URL + "/article", "http://localhost:" + port + "/article", "http://[::1]:" + port + "/", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/"} {
		_, err := guarded.Fetch(context.Background(), u)
		if !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s: got %v, want the guard's refusal", u, err)
		}
	}

	// With 127.0.0.1 allowed, a redirect to another non-public address is
	// still refused.
	f := loopbackFetcher(t, nil)
	for _, to := range []string{"http://169.254.169.254/latest/meta-data/", "http://127.0.0.2:" + port + "/article", "http://10.0.0.1/", "http://localhost6:" + port + "/"} {
		_, err := f.Fetch(context.Background(), srv.URL+"/redirect?to="+to)
		if !errors.Is(err, ErrBlockedAddress) {
			if strings.HasPrefix(to, "http://localhost6") && err != nil && strings.Contains(err.Error(), "no such host") {
				continue // no localhost6 name on this machine
			}
			t.Errorf("redirect to %s: got %v, want the guard's refusal", to, err)
		}
	}
	// A redirect to an allowed page is followed.
	p, err := f.Fetch(context.Background(), srv.URL+"/redirect?to=/plain")
	if err != nil || p.URL != srv.URL+"/plain" {
		t.Errorf("allowed redirect: %+v, %v", p, err)
	}

	// allow_private turns the guard off.
	open, _ := NewFetcher(FetchConfig{AllowPrivate: true})
	if _, err := open.Fetch(context.Background(), srv.URL+"/plain"); err != nil {
		t.Errorf("allow_private: %v", err)
	}
}

func TestFetchCache(t *testing.T) {
	var hits atomic.Int32
	srv := pageServer(t, &hits)
	now := time.Now()
	f := loopbackFetcher(t, func(c *FetchConfig) { c.CacheTTL = time.Minute; c.CacheSize = 1 })
	f.now = func() time.Time { return now }
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := f.Fetch(ctx, srv.URL+"/article"); err != nil {
			t.Fatal(err)
		}
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests for 3 reads within the TTL, want 1", hits.Load())
	}
	now = now.Add(2 * time.Minute)
	f.Fetch(ctx, srv.URL+"/article")
	if hits.Load() != 2 {
		t.Errorf("expired entry not refreshed: %d requests", hits.Load())
	}
	f.Fetch(ctx, srv.URL+"/plain") // evicts /article (size 1)
	f.Fetch(ctx, srv.URL+"/article")
	if hits.Load() != 3 {
		t.Errorf("evicted entry served: %d requests", hits.Load())
	}

	uncached := loopbackFetcher(t, func(c *FetchConfig) { c.CacheTTL = 0 })
	uncached.Fetch(ctx, srv.URL+"/article")
	uncached.Fetch(ctx, srv.URL+"/article")
	if hits.Load() != 5 {
		t.Errorf("cache_ttl 0 cached: %d requests", hits.Load())
	}
}

func TestFetchAllConcurrencyLimit(t *testing.T) {
	var cur, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		cur.Add(-1)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "page "+r.URL.Path)
	}))
	defer srv.Close()
	f := loopbackFetcher(t, func(c *FetchConfig) { c.Concurrency = 2 })
	var urls []string
	for i := 0; i < 8; i++ {
		urls = append(urls, fmt.Sprintf("%s/p%d", srv.URL, i))
	}
	pages, errs := f.FetchAll(context.Background(), urls)
	for i := range urls {
		if errs[i] != nil || pages[i].Text != fmt.Sprintf("page /p%d", i) {
			t.Errorf("page %d: %q, %v", i, pages[i].Text, errs[i])
		}
	}
	if peak.Load() > 2 {
		t.Errorf("%d pages read at once, limit 2", peak.Load())
	}
}

func TestFetchSendsUserAgent(t *testing.T) {
	got := make(chan http.Header, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "天行健")
	}))
	defer srv.Close()
	f := loopbackFetcher(t, nil)
	if _, err := f.Fetch(context.Background(), srv.URL+"/a"); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h.Get("User-Agent") != DefaultUserAgent || !strings.Contains(h.Get("Accept"), "text/html") {
		t.Errorf("default headers: User-Agent %q, Accept %q", h.Get("User-Agent"), h.Get("Accept"))
	}
	custom := loopbackFetcher(t, func(c *FetchConfig) { c.UserAgent = "Mozilla/5.0 (X11; Linux x86_64) mixchat-test" })
	if _, err := custom.Fetch(context.Background(), srv.URL+"/b"); err != nil {
		t.Fatal(err)
	}
	if ua := (<-got).Get("User-Agent"); ua != "Mozilla/5.0 (X11; Linux x86_64) mixchat-test" {
		t.Errorf("configured User-Agent not sent: %q", ua)
	}
}

// TestFetchSharedReadSurvivesACancelledCaller: two requests read the same
// page at once; the one that started the read goes away, and the other
// still gets the page from the one read.
func TestFetchSharedReadSurvivesACancelledCaller(t *testing.T) {
	var hits atomic.Int32
	started := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			close(started)
		}
		<-release
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "是故易有太极。")
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	f := loopbackFetcher(t, nil)
	u := srv.URL + "/shared"

	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { _, err := f.Fetch(first, u); firstErr <- err }()
	<-started
	second := make(chan error, 1)
	var page Page
	go func() {
		var err error
		page, err = f.Fetch(context.Background(), u)
		second <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the second caller join the read
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
	close(release)
	if err := <-second; err != nil || page.Text != "是故易有太极。" {
		t.Errorf("waiting caller: %+v, %v", page, err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("%d reads of one page, want 1 shared", n)
	}
	// A caller whose ctx has already ended starts no read.
	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, err := f.Fetch(gone, srv.URL+"/other"); !errors.Is(err, context.Canceled) || hits.Load() != 1 {
		t.Errorf("ended ctx: %v, %d reads", err, hits.Load())
	}
}
