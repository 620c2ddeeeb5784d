package server

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/web"
)

// guardRequest is one request through the guard, served in process.
type guardRequest struct {
	name, method, path, host string
	header                   map[string]string
	body                     string
	status                   int // want; 0: anything but the guard's refusals
}

func serveGuard(t *testing.T, s *Server, r guardRequest) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	var req *http.Request
	if body != nil {
		req = httptest.NewRequest(r.method, r.path, body)
	} else {
		req = httptest.NewRequest(r.method, r.path, nil)
	}
	req.Host = r.host
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestRequestGuard: Host allow-list (DNS rebinding), Origin on
// state-changing requests (cross-site requests) and JSON Content-Type.
func TestRequestGuard(t *testing.T) {
	ts := newTestServer(t, nil)
	s := New(Options{Store: ts.store, Models: ts.models, Chat: ts.Server.chat, PublicHosts: []string{"chat.example.com", "*.corp.example"},
		Access: Access{CORS: auth.CORSConfig{AllowedOrigins: []string{"https://app.example.org"}}}})
	json := map[string]string{"Content-Type": "application/json"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, r := range []guardRequest{
		// Host.
		{name: "rebinding", method: "GET", path: "/conversations", host: "evil.example", status: http.StatusMisdirectedRequest},
		{name: "rebinding with port", method: "GET", path: "/conversations", host: "evil.example:7861", status: http.StatusMisdirectedRequest},
		{name: "suffix is not a subdomain", method: "GET", path: "/conversations", host: "evilchat.example.com", status: http.StatusMisdirectedRequest},
		{name: "localhost", method: "GET", path: "/conversations", host: "localhost:7861", status: 200},
		{name: "name under localhost", method: "GET", path: "/conversations", host: "app.localhost", status: 200},
		{name: "loopback v4", method: "GET", path: "/conversations", host: "127.0.0.1:7861", status: 200},
		{name: "loopback v6", method: "GET", path: "/conversations", host: "[::1]:7861", status: 200},
		{name: "IP address", method: "GET", path: "/conversations", host: "10.0.0.5:7861", status: 200},
		{name: "configured", method: "GET", path: "/conversations", host: "Chat.Example.com.", status: 200},
		{name: "configured wildcard", method: "GET", path: "/conversations", host: "a.corp.example:443", status: 200},
		{name: "probe any host", method: "GET", path: "/healthz", host: "mixchat-7d9f:7861", status: 200},
		{name: "web app refused too", method: "GET", path: "/", host: "evil.example", status: http.StatusMisdirectedRequest},
		// Origin.
		{name: "cross-site delete", method: "POST", path: "/conversations", host: "localhost:7861",
			header: with("Content-Type", "application/json", "Origin", "http://evil.example"), body: `{}`, status: http.StatusForbidden},
		{name: "opaque origin", method: "DELETE", path: "/conversations/x", host: "localhost:7861",
			header: with("Origin", "null"), status: http.StatusForbidden},
		{name: "same origin", method: "POST", path: "/conversations", host: "localhost:7861",
			header: with("Content-Type", "application/json", "Origin", "http://localhost:7861"), body: `{}`, status: http.StatusCreated},
		{name: "CORS origin", method: "POST", path: "/conversations", host: "chat.example.com",
			header: with("Content-Type", "application/json", "Origin", "https://app.example.org"), body: `{}`, status: http.StatusCreated},
		{name: "public name behind a proxy passing its own Host", method: "POST", path: "/conversations", host: "127.0.0.1:7861",
			header: with("Content-Type", "application/json", "Origin", "https://chat.example.com"), body: `{}`, status: http.StatusCreated},
		{name: "localhost page on another port", method: "POST", path: "/conversations", host: "127.0.0.1:7861",
			header: with("Content-Type", "application/json", "Origin", "http://localhost:3000"), body: `{}`, status: http.StatusForbidden},
		{name: "read from another origin", method: "GET", path: "/conversations", host: "localhost:7861",
			header: with("Origin", "http://evil.example"), status: 200},
		{name: "no origin (curl, SDKs)", method: "POST", path: "/conversations", host: "localhost", header: json, body: `{}`, status: http.StatusCreated},
		// Content-Type.
		{name: "text/plain", method: "POST", path: "/conversations", host: "localhost",
			header: with("Content-Type", "text/plain;charset=UTF-8"), body: `{}`, status: http.StatusUnsupportedMediaType},
		{name: "form", method: "POST", path: "/chat/chat", host: "localhost",
			header: with("Content-Type", "application/x-www-form-urlencoded"), body: `{"query":"x"}`, status: http.StatusUnsupportedMediaType},
		{name: "multipart on a JSON endpoint", method: "POST", path: "/chat/chat", host: "localhost",
			header: with("Content-Type", "multipart/form-data; boundary=x"), body: "--x--", status: http.StatusUnsupportedMediaType},
		{name: "none", method: "PATCH", path: "/conversations/x", host: "localhost", body: `{"name":"a"}`, status: http.StatusUnsupportedMediaType},
		{name: "json with charset", method: "POST", path: "/conversations", host: "localhost",
			header: with("Content-Type", "application/json; charset=utf-8"), body: `{}`, status: http.StatusCreated},
		{name: "bodyless delete", method: "DELETE", path: "/conversations/nope", host: "localhost", status: http.StatusNotFound},
	} {
		t.Run(r.name, func(t *testing.T) {
			rec := serveGuard(t, s, r)
			if rec.Code != r.status {
				t.Fatalf("%s %s (Host %s) = %d %s, want %d", r.method, r.path, r.host, rec.Code, rec.Body, r.status)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
		})
	}
}

// TestSecurityHeaders: every response says nosniff; the web app has its
// own Content Security Policy, everything else one that runs nothing.
func TestSecurityHeaders(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tc := range []struct{ path, csp string }{
		{"/", web.ContentSecurityPolicy},
		{"/index.html", web.ContentSecurityPolicy},
		{"/healthz", "sandbox"},
		{"/conversations", "sandbox"},
		{"/nope", "sandbox"},
	} {
		rec := serveGuard(t, ts.Server, guardRequest{method: "GET", path: tc.path, host: "localhost"})
		h := rec.Header()
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), tc.csp) {
			t.Errorf("%s: nosniff %q, CSP %q; want one with %q", tc.path, h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"), tc.csp)
		}
		if strings.Contains(h.Get("Content-Security-Policy"), "unsafe-") {
			t.Errorf("%s: CSP allows unsafe sources: %q", tc.path, h.Get("Content-Security-Policy"))
		}
	}
}

// TestWebAppFitsItsCSP: the page has no inline script, style or event
// handler and loads nothing from another origin, so appCSP breaks none of
// it; the scripts set no style attributes from strings.
func TestWebAppFitsItsCSP(t *testing.T) {
	page, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`), // a script with a body
		regexp.MustCompile(`<script\b[^>]*\bsrc=["']?(https?:)?//`),
		regexp.MustCompile(`<style\b`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(href|src)=["']?(https?:)?//`),
		regexp.MustCompile(`javascript:`),
	} {
		if m := bad.Find(page); m != nil {
			t.Errorf("index.html has %q, which the app's CSP blocks", m)
		}
	}
	entries, err := fs.ReadDir(web.FS(), "assets/js")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, _ := fs.ReadFile(web.FS(), "assets/js/"+e.Name())
		for _, bad := range []string{"eval(", "new Function(", "setAttribute('style'", `setAttribute("style"`, "cssText", "insertRule"} {
			if strings.Contains(string(src), bad) {
				t.Errorf("%s uses %s, which the app's CSP blocks", e.Name(), bad)
			}
		}
	}
}
