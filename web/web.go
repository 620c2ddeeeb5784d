// Package web is mixchat's web app: plain HTML, CSS and JavaScript modules
// (no build step) embedded in the binary, so `mixchat serve` needs nothing
// else at run time. Handler serves index.html at "/" and the files under
// assets/ at "/assets/"; the app talks to the public HTTP API only.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed index.html assets
var files embed.FS

// FS returns the app's files: index.html at the root and everything it
// loads below assets/.
func FS() fs.FS { return files }

// ContentSecurityPolicy is sent with the page: scripts, styles, images and
// connections come from the server itself only, and no inline script or
// event-handler attribute runs, whatever text ends up in the page.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one embedded file ready to serve.
type file struct {
	name  string
	data  []byte
	etag  string
	ctype string
}

// contentTypes maps the extensions the app uses to their types; the
// standard table depends on the system's mime files for some (.mjs), and a
// module script served with a wrong type does not run.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
	".md":   "text/plain; charset=utf-8",
}

// Handler returns the handler serving the app. "/" and "/index.html" give
// the page; "/assets/..." the files it loads; anything else is a 404. Every
// file carries a strong ETag and "Cache-Control: no-cache", so browsers
// revalidate cheaply (304) and never run a stale app after an upgrade.
func Handler() http.Handler {
	byPath := map[string]*file{}
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			ctype = http.DetectContentType(data)
		}
		byPath["/"+p] = &file{name: p, data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: ctype}
		return nil
	})
	byPath["/"] = byPath["/index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f := byPath[r.URL.Path]
		if f == nil || (r.URL.Path != "/" && r.URL.Path != "/index.html" && !strings.HasPrefix(r.URL.Path, "/assets/")) {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.ctype)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if f.name == "index.html" {
			h.Set("Content-Security-Policy", ContentSecurityPolicy)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
		}
		http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.data))
	})
}
