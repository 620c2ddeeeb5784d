package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWebRoutes checks that the web app is served at / and /assets/ while
// every other path stays with the API and its JSON errors.
func TestWebRoutes(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		method, path string
		status       int
		ctype        string // prefix of Content-Type
		body         string // substring of the body
	}{
		{"GET", "/", 200, "text/html", "<title>mixchat</title>"},
		{"HEAD", "/", 200, "text/html", ""},
		{"GET", "/index.html", 200, "text/html", "/assets/js/main.js"},
		{"GET", "/assets/app.css", 200, "text/css", ".msg"},
		{"GET", "/assets/js/chat.js", 200, "text/javascript", "export"},
		{"GET", "/assets/nope.js", 404, "", ""},
		{"GET", "/healthz", 200, "application/json", `"status":"ok"`},
		{"GET", "/server/list_models", 200, "application/json", `"offline"`},
		{"GET", "/nope", 404, "application/json", `"msg":"no route GET /nope"`},
		{"POST", "/", 405, "application/json", `"code":405`},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, ts.http.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %s…", ct, tt.ctype)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body %q does not contain %q", body, tt.body)
			}
			if strings.HasPrefix(tt.ctype, "application/json") && !json.Valid(body) {
				t.Errorf("body %q is not JSON", body)
			}
		})
	}
}
