package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultStreamWriteTimeout bounds the write of one SSE event when
// Options.StreamWriteTimeout is 0.
const DefaultStreamWriteTimeout = 15 * time.Second

// sse writes Server-Sent Events: each Send marshals v, writes one
// "data: ...\n\n" event and flushes it to the client.
//
// Each event's write and flush must end within timeout (a write deadline
// on the connection, http.ResponseController.SetWriteDeadline): a client
// that stops reading fails the write after it, which stops the work
// producing its events (the turn is cut and stored as interrupted, as when
// the client goes away), instead of holding it, and what it holds, for as
// long as the client keeps the connection open.
type sse struct {
	w       http.ResponseWriter
	flusher http.Flusher
	// rc controls the connection under every wrapper of w: the write
	// deadline, and the flush's error, which the wrappers' Flush drops.
	rc      *http.ResponseController
	timeout time.Duration
	started bool
}

// newSSE returns the SSE writer of the request in c, each event's write
// bounded by the server's stream write timeout.
func (s *Server) newSSE(c *gin.Context) *sse { return newSSE(c, s.opts.StreamWriteTimeout) }

func newSSE(c *gin.Context, timeout time.Duration) *sse {
	f, _ := c.Writer.(http.Flusher)
	return &sse{w: c.Writer, flusher: f, rc: http.NewResponseController(innermost(c.Writer)), timeout: timeout}
}

// innermost unwraps w (gin's writer, the observer's) down to the
// net/http response.
func innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

func (s *sse) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// Send writes v as one event. It returns the write error, so a client that
// went away, or stopped reading for longer than the write timeout, stops
// the work producing events.
func (s *sse) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return s.raw(b)
}

// raw writes data as one event as is.
func (s *sse) raw(data []byte) error {
	s.start()
	if s.timeout > 0 {
		// The deadline stays after the last event, bounding the end of
		// the response too; net/http clears it when the response is done.
		if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", data); err != nil {
		return err
	}
	if s.flusher == nil {
		return nil
	}
	s.flusher.Flush() // through the wrappers, which note the stream
	// The wrappers' Flush drops the connection's error; the response's own
	// (nothing left to send now) reports it.
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
