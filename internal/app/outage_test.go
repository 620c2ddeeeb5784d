package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/lockedbuf"
	"github.com/mixchat/mixchat/internal/pgtest"
	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/kb"
)

// tcpProxy forwards a loopback port to the test PostgreSQL server, so a
// test can take the database away (stop: the port refuses connections and
// open ones are cut, as when the server stops) and bring it back on the
// same address.
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// start listens on the proxy's address (the same port again after stop).
func (p *tcpProxy) start() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the port and every connection through it.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// TestPostgresOutage: with the PostgreSQL store out of reach, requests get
// 503 with Retry-After and a message that names no host, port, user or
// database, with a made-up key as with a real one; /readyz, which needs no
// key, says which dependency is down and nothing more; the log has the
// detail; and the server serves again once the database is back.
func TestPostgresOutage(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Schema(t, "outage")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = t.TempDir(), false
	cfg.Store.Driver, cfg.Store.DSN = "postgres", u.String()
	cfg.KB.Store = kb.KBStorePostgres
	cfg.Auth.Enabled = true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	keys, err := OpenKeyStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := keys.CreateKey(ctx, auth.KeySpec{UserID: "ops", Role: auth.RoleAdmin})
	keys.Close()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedbuf.Buffer
	a, err := New(ctx, cfg, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.KB.Create(ctx, "outage", kb.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a.Server.Handler())
	defer hs.Close()

	type reply struct {
		status     int
		retryAfter string
		body       string
	}
	do := func(method, path, key, body string) reply {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
	}
	chat := `{"query":"乾卦是什么？","conversation_id":"outage-1","stream":false}`
	if r := do("POST", "/chat/chat", token, chat); r.status != http.StatusOK {
		t.Fatalf("before the outage: /chat/chat %d %s", r.status, r.body)
	}

	proxy.stop()
	_, port, _ := net.SplitHostPort(proxy.addr)
	secret := []string{proxy.addr, ":" + port, "127.0.0.1", "user=", "database=", "postgres", "dial"}
	leaks := func(body string) string {
		for _, s := range secret {
			if strings.Contains(body, s) {
				return s
			}
		}
		return ""
	}
	for _, tc := range []struct{ name, method, path, key, body string }{
		{"made-up key", "POST", "/chat/chat", "mx-madeupmadeupmadeupmadeupmadeup", chat},
		{"real key", "POST", "/chat/chat", token, chat},
		{"real key, search_docs", "POST", "/knowledge_base/search_docs", token, `{"query":"乾","knowledge_base_name":"outage"}`},
		{"real key, /v1", "POST", "/v1/chat/completions", token, `{"model":"mixchat-llm","messages":[{"role":"user","content":"乾卦是什么？"}]}`},
	} {
		r := do(tc.method, tc.path, tc.key, tc.body)
		if r.status != http.StatusServiceUnavailable || r.retryAfter == "" {
			t.Errorf("%s: %s: %d, Retry-After %q; want 503 with Retry-After", tc.name, tc.path, r.status, r.retryAfter)
		}
		if s := leaks(r.body); s != "" {
			t.Errorf("%s: %s: body names %q: %s", tc.name, tc.path, s, r.body)
		}
	}
	r := do("GET", "/readyz", "", "")
	var ready struct {
		Checks map[string]struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.body), &ready); err != nil || r.status != http.StatusServiceUnavailable ||
		ready.Checks["store"].Status != "failed" || ready.Checks["store"].Error == "" {
		t.Errorf("/readyz: %d %s; want 503 saying the store failed", r.status, r.body)
	}
	if s := leaks(r.body); s != "" {
		t.Errorf("/readyz names %q: %s", s, r.body)
	}
	if log := logs.String(); !strings.Contains(log, "store unavailable") || !strings.Contains(log, proxy.addr) {
		t.Errorf("the log does not have the outage's detail:\n%s", lastLines(log, 10))
	}

	proxy.start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := do("POST", "/chat/chat", token, chat)
		if r.status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the database came back: /chat/chat %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := do("GET", "/readyz", "", ""); r.status != http.StatusOK {
		t.Errorf("after the database came back: /readyz %d %s", r.status, r.body)
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
