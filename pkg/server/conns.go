package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// Connections: how long the server waits for a client, and how many
// connections one client may hold.
//
// The http.Server's own ReadTimeout and WriteTimeout are left at 0 on
// purpose. Both run from the start of a request: a WriteTimeout would cut
// every streamed reply (and every unstreamed one whose model is slow) at
// that age, and a ReadTimeout that passes while the handler still runs
// makes net/http's background read fail, which cancels the request's
// context. Instead the deadlines middleware sets them per request with
// http.ResponseController:
//   - the body must arrive within ReadTimeout of the request's start, or,
//     for uploads (multipart bodies), at MinTransferRate bytes a second on
//     average after that first ReadTimeout; the deadline is cleared once
//     the body is read, so the background read never times out;
//   - a reply that is not an SSE stream must be written within
//     WriteTimeout of its first byte, plus the time its bytes take at
//     MinTransferRate (a large download on a slow link goes on, a client
//     that stops reading does not hold the connection); an SSE stream
//     ("text/event-stream") gets no deadline here: the SSE writer sets one
//     per event (sse.go, server.stream_write_timeout).
//
// Each request starts with the write deadline cleared, since net/http does
// not reset it between the requests of a keep-alive connection when its
// WriteTimeout is 0 (the last SSE event's deadline would otherwise outlive
// its stream). IdleTimeout and ReadHeaderTimeout are the
// http.Server's (NewHTTPServer).

// ConnLimits are the server's connection settings (server.* in the
// configuration); zero values take the defaults of DefaultConnLimits.
type ConnLimits struct {
	// ReadHeaderTimeout bounds the reading of a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a request's body (the first
	// ReadTimeout of an upload).
	ReadTimeout time.Duration
	// WriteTimeout bounds the writing of a reply that is not a stream.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has sent nothing for
	// that long.
	IdleTimeout time.Duration
	// MinTransferRate is the slowest average rate, in bytes a second, at
	// which an upload's body may arrive after its first ReadTimeout, and a
	// reply may be written after its first WriteTimeout.
	MinTransferRate int64
	// MaxConnsPerClient caps the connections open from one client address
	// (Listener); 0 means no cap. Connections from TrustedProxies are not
	// counted: a proxy carries many clients.
	MaxConnsPerClient int
	// TrustedProxies are the addresses or CIDR ranges whose
	// X-Forwarded-For (and X-Real-IP) name the client; from anyone else the
	// client is the connection's address. None by default.
	TrustedProxies []string
}

// DefaultConnLimits are the defaults of the configuration.
func DefaultConnLimits() ConnLimits {
	return ConnLimits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MinTransferRate:   8 << 10,
		MaxConnsPerClient: 64,
	}
}

// withDefaults fills zero fields from DefaultConnLimits (MaxConnsPerClient
// and TrustedProxies keep their zero: no cap, no proxy).
func (l ConnLimits) withDefaults() ConnLimits {
	d := DefaultConnLimits()
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MinTransferRate <= 0 {
		l.MinTransferRate = d.MinTransferRate
	}
	return l
}

// NewHTTPServer returns the http.Server to serve the API with: the
// handler, the header and idle timeouts (the read and write deadlines are
// the deadlines middleware's, see above).
func (s *Server) NewHTTPServer() *http.Server {
	l := s.opts.Conns
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
	}
}

// errSlowBody is the read error of a body that did not arrive in time.
var errSlowBody = errors.New("request body too slow")

// deadlines sets the request's read and write deadlines (see above) and
// closes the connection after a 401, so a client without a valid key
// cannot keep it open.
func (s *Server) deadlines() gin.HandlerFunc {
	l := s.opts.Conns
	return func(c *gin.Context) {
		rc := http.NewResponseController(c.Writer)
		start := time.Now()
		_ = rc.SetWriteDeadline(time.Time{}) // left by the connection's last reply
		if c.Request.Body != nil && c.Request.Body != http.NoBody {
			b := &deadlineBody{r: c.Request.Body, rc: rc, start: start, grace: l.ReadTimeout}
			if c.ContentType() == "multipart/form-data" {
				b.rate = l.MinTransferRate
			}
			b.extend()
			c.Request.Body = b
		}
		c.Writer = &deadlineWriter{ResponseWriter: c.Writer, rc: rc, timeout: l.WriteTimeout, rate: l.MinTransferRate}
		c.Next()
	}
}

// deadlineBody reads a request body under a read deadline: grace after
// start plus, with a rate, the time the bytes read so far may take at that
// rate. At the end of the body the deadline is cleared.
type deadlineBody struct {
	r     io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64 // bytes a second; 0: the whole body within grace
	n     int64
	done  bool
}

func (b *deadlineBody) extend() {
	d := b.start.Add(b.grace)
	if b.rate > 0 {
		d = d.Add(time.Duration(float64(b.n) / float64(b.rate) * float64(time.Second)))
	}
	_ = b.rc.SetReadDeadline(d)
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		if !b.done {
			b.done = true
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("%w: %w", errSlowBody, err)
	case err == nil && b.rate > 0:
		b.extend()
	}
	return n, err
}

func (b *deadlineBody) Close() error { return b.r.Close() }

// deadlineWriter sets the write deadline when the reply's headers go out
// (gin's WriteHeader only records the status): for a reply that is not an
// SSE stream WriteTimeout from then, extended by what each write adds at
// rate; none for a stream. A 401 closes the connection after the reply.
type deadlineWriter struct {
	gin.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	rate    int64
	checked bool
	timed   bool      // the reply has a deadline (not a stream)
	first   time.Time // when the headers went out
	n       int64     // bytes written
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *deadlineWriter) check() {
	if w.checked {
		return
	}
	w.checked = true
	if w.Status() == http.StatusUnauthorized {
		w.Header().Set("Connection", "close")
	}
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.timed, w.first = true, time.Now()
		_ = w.rc.SetWriteDeadline(w.first.Add(w.timeout))
	}
}

// wrote extends the deadline by the time n more bytes take at rate.
func (w *deadlineWriter) wrote(n int) {
	if !w.timed || n <= 0 {
		return
	}
	w.n += int64(n)
	extra := time.Duration(float64(w.n) / float64(w.rate) * float64(time.Second))
	_ = w.rc.SetWriteDeadline(w.first.Add(w.timeout + extra))
}

func (w *deadlineWriter) WriteHeaderNow() {
	w.check()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.check()
	w.wrote(len(b))
	return w.ResponseWriter.Write(b)
}

func (w *deadlineWriter) WriteString(s string) (int, error) {
	w.check()
	w.wrote(len(s))
	return w.ResponseWriter.WriteString(s)
}

func (w *deadlineWriter) Flush() {
	w.check()
	w.ResponseWriter.Flush()
}

// Listener returns ln with at most MaxConnsPerClient connections open
// from one client address at a time: a connection past the cap is closed
// at once, before any request is read, so one address cannot take every
// file descriptor. Connections from TrustedProxies are not counted.
func (s *Server) Listener(ln net.Listener) net.Listener {
	l := s.opts.Conns
	if l.MaxConnsPerClient <= 0 {
		return ln
	}
	return &capListener{Listener: ln, max: l.MaxConnsPerClient, proxies: s.proxies, open: map[string]int{}}
}

type capListener struct {
	net.Listener
	max     int
	proxies []*net.IPNet
	mu      sync.Mutex
	open    map[string]int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil {
			return c, nil
		}
		if ip := net.ParseIP(host); ip != nil && inNets(ip, l.proxies) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[host]--; l.open[host] <= 0 {
				delete(l.open, host)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// parseProxies reads TrustedProxies: addresses or CIDR ranges.
func parseProxies(list []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, p := range list {
		p = strings.TrimSpace(p)
		if !strings.Contains(p, "/") {
			ip := net.ParseIP(p)
			if ip == nil {
				return nil, fmt.Errorf("server.trusted_proxies: %q is not an address or CIDR range", p)
			}
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			return nil, fmt.Errorf("server.trusted_proxies: %q is not an address or CIDR range", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func inNets(ip net.IP, nets []*net.IPNet) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
