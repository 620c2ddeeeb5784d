package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		method, path string
		status       int
		ctype        string
		body         string // a substring of the body
		csp          bool
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/assets/js/main.js">`, true},
		{"GET", "/index.html", 200, "text/html; charset=utf-8", "<title>mixchat</title>", true},
		{"HEAD", "/", 200, "text/html; charset=utf-8", "", true},
		{"GET", "/assets/app.css", 200, "text/css; charset=utf-8", ".msg", false},
		{"GET", "/assets/js/main.js", 200, "text/javascript; charset=utf-8", "import", false},
		{"GET", "/assets/vendor/purify.es.mjs", 200, "text/javascript; charset=utf-8", "DOMPurify", false},
		{"GET", "/assets/vendor/marked.esm.js", 200, "text/javascript; charset=utf-8", "marked", false},
		{"GET", "/assets/icon.svg", 200, "image/svg+xml", "<svg", false},
		{"GET", "/assets/nope.js", 404, "", "", false},
		{"GET", "/web.go", 404, "", "", false},
		{"GET", "/assets/../web.go", 404, "", "", false},
		{"POST", "/", 405, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if tt.status != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if rec.Header().Get("ETag") == "" || rec.Header().Get("Cache-Control") != "no-cache" {
				t.Errorf("ETag %q, Cache-Control %q: want a strong ETag and no-cache", rec.Header().Get("ETag"), rec.Header().Get("Cache-Control"))
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); (csp != "") != tt.csp {
				t.Errorf("Content-Security-Policy %q, want present=%v", csp, tt.csp)
			}
			if tt.method == "HEAD" {
				if rec.Body.Len() != 0 {
					t.Errorf("HEAD sent %d body bytes", rec.Body.Len())
				}
				return
			}
			if !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("body does not contain %q", tt.body)
			}
		})
	}
}

func TestHandlerRevalidates(t *testing.T) {
	h := Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/assets/app.css", nil))
	etag := rec.Header().Get("ETag")
	req := httptest.NewRequest("GET", "/assets/app.css", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match %s: status %d, want 304", etag, rec.Code)
	}
}

// TestCSPForbidsInlineScript keeps the policy strict: inline script and
// event-handler attributes must never run, whatever text reaches the page.
func TestCSPForbidsInlineScript(t *testing.T) {
	for _, bad := range []string{"'unsafe-inline'", "'unsafe-eval'", "*"} {
		if strings.Contains(ContentSecurityPolicy, bad) {
			t.Errorf("policy contains %s", bad)
		}
	}
	if !strings.Contains(ContentSecurityPolicy, "script-src 'self'") {
		t.Errorf("policy %q does not limit scripts to the server", ContentSecurityPolicy)
	}
}

// TestAssetsReferenced checks that every file index.html and the modules
// load is embedded, and that every module import resolves.
func TestAssetsReferenced(t *testing.T) {
	fsys := FS()
	index, err := fs.ReadFile(fsys, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="/(assets/[^"]+)"`).FindAllStringSubmatch(string(index), -1)
	if len(refs) < 3 {
		t.Fatalf("index.html references %d assets, want the stylesheet, the icon and main.js", len(refs))
	}
	for _, m := range refs {
		if _, err := fs.Stat(fsys, m[1]); err != nil {
			t.Errorf("index.html references %s: %v", m[1], err)
		}
	}
	imp := regexp.MustCompile(`(?m)^import[^'"]*['"](\./[^'"]+|\.\./[^'"]+)['"]`)
	mods, _ := fs.Glob(fsys, "assets/js/*.js")
	if len(mods) == 0 {
		t.Fatal("no modules under assets/js")
	}
	for _, mod := range mods {
		f, err := fsys.Open(mod)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := io.ReadAll(f)
		f.Close()
		for _, m := range imp.FindAllStringSubmatch(string(src), -1) {
			target := joinPath(mod, m[1])
			if _, err := fs.Stat(fsys, target); err != nil {
				t.Errorf("%s imports %s (%s): %v", mod, m[1], target, err)
			}
		}
	}
}

// joinPath resolves a relative module specifier against the module's path.
func joinPath(from, rel string) string {
	parts := strings.Split(from, "/")
	parts = parts[:len(parts)-1]
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case ".":
		case "..":
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "/")
}

// TestStringsTranslated checks that every interface string the page and
// the modules name literally exists in English and in Chinese.
func TestStringsTranslated(t *testing.T) {
	fsys := FS()
	src, err := fs.ReadFile(fsys, "assets/js/i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	dict := func(name string) map[string]bool {
		start := strings.Index(string(src), "const "+name+" = {")
		if start < 0 {
			t.Fatalf("i18n.js has no dictionary %s", name)
		}
		body := string(src[start:])
		body = body[:strings.Index(body, "\n};")]
		keys := map[string]bool{}
		for _, m := range regexp.MustCompile(`(?m)^  (\w+):`).FindAllStringSubmatch(body, -1) {
			keys[m[1]] = true
		}
		return keys
	}
	en, zh := dict("en"), dict("zh")
	for k := range en {
		if !zh[k] {
			t.Errorf("%q has no Chinese text", k)
		}
	}
	for k := range zh {
		if !en[k] {
			t.Errorf("%q has no English text", k)
		}
	}
	used := map[string]string{}
	index, _ := fs.ReadFile(fsys, "index.html")
	for _, m := range regexp.MustCompile(`data-i18n(?:-placeholder|-aria-label|-title)?="(\w+)"`).FindAllStringSubmatch(string(index), -1) {
		used[m[1]] = "index.html"
	}
	mods, _ := fs.Glob(fsys, "assets/js/*.js")
	for _, mod := range mods {
		b, _ := fs.ReadFile(fsys, mod)
		for _, m := range regexp.MustCompile(`\bt\('(\w+)'`).FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = mod
		}
	}
	if len(used) < 50 {
		t.Fatalf("found %d strings in use, want the page's and the modules'", len(used))
	}
	for k, where := range used {
		if !en[k] || !zh[k] {
			t.Errorf("%s uses %q, missing from a dictionary (en %v, zh %v)", where, k, en[k], zh[k])
		}
	}
}

// TestLanguageFollowsBrowser runs i18n.js under Node: the interface
// language is the browser's first Chinese or English language
// (navigator.languages) unless the user chose one, which is kept.
func TestLanguageFollowsBrowser(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the language choice is checked in the browser tests (e2e)")
	}
	script := filepath.Join(t.TempDir(), "lang.mjs")
	if err := os.WriteFile(script, []byte(`Object.defineProperty(globalThis, 'navigator', { value: { languages: JSON.parse(process.argv[2]) }, configurable: true });
const store = JSON.parse(process.argv[3]);
globalThis.localStorage = { getItem: (k) => store[k] ?? null, setItem: (k, v) => { store[k] = v; } };
const m = await import(process.argv[4]);
console.log(m.getLang());
`), 0o644); err != nil {
		t.Fatal(err)
	}
	i18n, err := filepath.Abs("assets/js/i18n.js")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		languages, stored, want string
	}{
		{`["zh-CN","en"]`, `{}`, "zh"},
		{`["en-US","zh-CN"]`, `{}`, "en"},
		{`["fr-FR","zh-TW"]`, `{}`, "zh"},
		{`["fr-FR","de"]`, `{}`, "en"},
		{`["zh-CN"]`, `{"mixchat.lang":"en"}`, "en"},
		{`["en-GB"]`, `{"mixchat.lang":"zh"}`, "zh"},
	}
	for _, tt := range tests {
		out, err := exec.Command(node, script, tt.languages, tt.stored, i18n).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("languages %s, stored %s: %q, want %q", tt.languages, tt.stored, got, tt.want)
		}
	}
}

// TestPhoneNoticeCompact checks the phone layout keeps the offline-model
// notice to two lines (e2e/firstrun_test.go measures it in a browser).
func TestPhoneNoticeCompact(t *testing.T) {
	b, err := fs.ReadFile(files, "assets/app.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	i := strings.Index(css, "@media (max-width: 820px)")
	if i < 0 || !regexp.MustCompile(`\.banner\.info p \{[^}]*line-clamp: 2`).MatchString(css[i:]) {
		t.Error("app.css: the phone layout does not clamp the offline-model notice to two lines")
	}
}
