// Package redact makes error messages fit for clients: what an operator's
// log keeps (absolute paths, resolver addresses) is left out of what a
// reply says.
package redact

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Message is err's message as a client may read it: absolute file
// paths (of *fs.PathError and *os.LinkError) cut to their last element and
// the resolver's address of a *net.DNSError ("lookup x on 10.0.0.2:53")
// left out. Log err itself: the full message is for operators.
func Message(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	cut := func(p string) {
		if filepath.IsAbs(p) {
			msg = strings.ReplaceAll(msg, p, filepath.Base(p))
		}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cut(pe.Path)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		cut(le.Old)
		cut(le.New)
	}
	var de *net.DNSError
	if errors.As(err, &de) && de.Server != "" {
		msg = strings.ReplaceAll(msg, " on "+de.Server, "")
	}
	return msg
}
