package server

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
)

// The request guard keeps other sites out of a server that trusts its
// network (the default: loopback, no keys) and gives browsers the headers
// that keep stored content inert:
//
//   - Host must be an IP address, localhost (or a name under .localhost) or
//     one of Options.PublicHosts, else 421: a page on another site that
//     re-points its own name at this server (DNS rebinding) sends its own
//     name. Health, readiness and metrics answer any Host (probes use the
//     pod's address or a service name).
//   - A state-changing request (POST, PUT, PATCH, DELETE) carrying an
//     Origin must come from the server's own origin (the Origin's host is
//     the request's Host, or one of Options.PublicHosts: a proxy may pass
//     its own Host on) or an origin allowed by auth.cors, else 403.
//   - A state-changing request with a body must say Content-Type:
//     application/json (multipart/form-data on the upload routes), else 415:
//     browsers send text/plain and form bodies across sites without asking.
//   - Every response carries X-Content-Type-Options: nosniff, and every
//     response but the web app's a Content Security Policy that runs
//     nothing (the app's page has its own, web.ContentSecurityPolicy).

// apiCSP is the policy of every other response: nothing in it runs, even
// when opened in a tab (sandbox gives it an origin of its own).
const apiCSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"

// webPages are the routes that serve the web app.
var webPages = map[string]bool{"/": true, "/index.html": true, "/assets/*path": true}

// anyHostRoutes answer whatever the Host: probes and scrapers.
var anyHostRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// uploadRoutes take multipart/form-data instead of JSON.
var uploadRoutes = map[string]bool{"/knowledge_base/upload_docs": true}

// requestGuard returns the middleware described above.
func (s *Server) requestGuard() gin.HandlerFunc {
	hosts := newHostList(s.opts.PublicHosts)
	origins := map[string]bool{}
	anyOrigin := false
	for _, o := range s.opts.Access.CORS.AllowedOrigins {
		anyOrigin = anyOrigin || o == "*"
		origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return func(c *gin.Context) {
		route := c.FullPath()
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		if !webPages[route] {
			h.Set("Content-Security-Policy", apiCSP)
			h.Set("Referrer-Policy", "same-origin")
		}
		if !anyHostRoutes[route] && !hosts.allows(c.Request.Host) {
			s.log.WarnContext(c.Request.Context(), "request for an unknown host refused", "host", c.Request.Host, "path", c.Request.URL.Path)
			writeError(c, &Error{Status: http.StatusMisdirectedRequest,
				Msg: "host " + quoteHost(c.Request.Host) + " is not served here: add it to server.public_hosts"})
			return
		}
		if !stateChanging(c.Request.Method) {
			c.Next()
			return
		}
		if o := c.GetHeader("Origin"); o != "" && !anyOrigin && !origins[strings.ToLower(o)] && !sameOrigin(o, c.Request.Host) && !hosts.public(o) {
			writeError(c, &Error{Status: http.StatusForbidden,
				Msg: "cross-site request refused: origin " + quoteHost(o) + " is neither this server nor in auth.cors.allowed_origins"})
			return
		}
		// Upload routes parse their multipart form themselves (and answer
		// 400 for anything else); Origin keeps other sites from them.
		if hasBody(c.Request) && !uploadRoutes[route] {
			if err := checkContentType(c.GetHeader("Content-Type")); err != nil {
				writeError(c, err)
				return
			}
		}
		c.Next()
	}
}

func stateChanging(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// hasBody reports whether a request carries a body (a length, or chunked).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// checkContentType accepts JSON: application/json, or any +json type.
func checkContentType(ct string) *Error {
	if mt, _, err := mime.ParseMediaType(ct); err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	if ct == "" {
		ct = "none"
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Msg: "Content-Type " + quoteHost(ct) + " is not accepted here: send application/json"}
}

// sameOrigin reports whether origin names the host the request was sent to.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// quoteHost shortens and quotes a client-sent value for a message.
func quoteHost(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.ToValidUTF8(v, "?") + `"`
}

// hostList is the Host allow-list: IP addresses, localhost and names
// under .localhost always; configured names exactly, "*.example.com" for
// the names under example.com, "*" for any.
type hostList struct {
	any      bool
	exact    map[string]bool
	suffixes []string
}

func newHostList(names []string) hostList {
	l := hostList{exact: map[string]bool{"localhost": true}, suffixes: []string{".localhost"}}
	for _, n := range names {
		n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
		switch {
		case n == "*":
			l.any = true
		case strings.HasPrefix(n, "*."):
			l.suffixes = append(l.suffixes, n[1:])
		case n != "":
			if h, _, err := net.SplitHostPort(n); err == nil {
				n = h
			}
			l.exact[n] = true
		}
	}
	return l
}

// public reports whether origin (scheme://host[:port]) names one of the
// configured public hosts (not merely an IP address or localhost).
func (l hostList) public(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if l.any || (l.exact[h] && h != "localhost") {
		return true
	}
	for _, s := range l.suffixes[1:] { // [0] is .localhost
		if strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// allows reports whether a request's Host header is served. An address
// given as an IP literal cannot be re-pointed by another site's DNS.
func (l hostList) allows(host string) bool {
	if l.any {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || l.exact[host] {
		return true
	}
	for _, s := range l.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}
