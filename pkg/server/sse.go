package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

// sse writes Server-Sent Events: each Send marshals v, writes one
// "data: ...\n\n" event and flushes it to the client.
type sse struct {
	w       http.ResponseWriter
	flusher http.Flusher
	started bool
}

func newSSE(c *gin.Context) *sse {
	f, _ := c.Writer.(http.Flusher)
	return &sse{w: c.Writer, flusher: f}
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
// went away stops the work producing events.
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
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", data); err != nil {
		return err
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}
