package mix

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// promptURL is how a source's address is shown to a prompt: web
// addresses with their percent-escapes decoded (fewer tokens, the same
// page), local file links not at all (the title names the document, and
// the docs event gives clients the link).
func promptURL(u string) string {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return ""
	}
	if d, err := url.PathUnescape(u); err == nil && utf8.ValidString(d) && !strings.ContainsAny(d, " \n") {
		return d
	}
	return u
}
