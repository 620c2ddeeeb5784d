package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// DefaultStreamWriteTimeout bounds the write of one SSE event when
// Options.StreamWriteTimeout is 0.
const DefaultStreamWriteTimeout = 15 * time.Second

// maxPendingEvents bounds the bytes of events encoded but not yet handed
// to the connection: past it, Send waits for the write in flight, so a
// client that reads slowly slows the work producing its events.
const maxPendingEvents = 32 << 10

// sse writes Server-Sent Events: each Send marshals v as one
// "data: ...\n\n" event and queues it; events go to the client in the
// order sent.
//
// Writes run in a goroutine of their own, one write and one flush for all
// the events queued since the last: the first event of a quiet stream
// leaves at once, and the events sent while a write is in flight (the
// pieces of a reply that arrive together, the deltas of answerers running
// at once) leave together in the next, instead of costing a write, a
// flush and a packet each. Each event stays a whole "data:" event of its
// own; only the writes are shared. Whoever makes an sse calls close
// before the handler returns.
//
// Each write and flush must end within timeout (a write deadline on the
// connection, http.ResponseController.SetWriteDeadline): a client that
// stops reading fails the write after it, and the next Send returns the
// error, which stops the work producing its events (the turn is cut and
// stored as interrupted, as when the client goes away), instead of
// holding it, and what it holds, for as long as the client keeps the
// connection open.
type sse struct {
	w       http.ResponseWriter
	flusher http.Flusher
	// rc controls the connection under every wrapper of w: the write
	// deadline, and the flush's error, which the wrappers' Flush drops.
	rc      *http.ResponseController
	timeout time.Duration
	// started: the headers were written (by the first event, or start).
	// Only the handler's goroutines, one at a time, set and read it.
	started bool

	mu      sync.Mutex
	idle    sync.Cond // a write ended
	pending []byte    // events queued, not yet written
	spare   []byte    // the buffer of the last write, reused for pending
	writing bool      // a goroutine is writing pending
	err     error     // the first write error: every later Send returns it
	// inline: the events are written by the goroutine that sends them
	// (see finishing).
	inline bool
}

// newSSE returns the SSE writer of the request in c, each event's write
// bounded by the server's stream write timeout.
func (s *Server) newSSE(c *gin.Context) *sse { return newSSE(c, s.opts.StreamWriteTimeout) }

func newSSE(c *gin.Context, timeout time.Duration) *sse {
	f, _ := c.Writer.(http.Flusher)
	s := &sse{w: c.Writer, flusher: f, rc: http.NewResponseController(innermost(c.Writer)), timeout: timeout}
	s.idle.L = &s.mu
	return s
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

// start writes the stream's headers (to the writers under w, which note
// that a stream began; the client gets them with the first event).
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
	if now, ok := s.w.(interface{ WriteHeaderNow() }); ok {
		now.WriteHeaderNow()
	}
}

// Send queues v as one event. It returns the error of a write that
// failed, so a client that went away, or stopped reading for longer than
// the write timeout, stops the work producing events. Send is not called
// concurrently.
func (s *sse) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return s.raw(b)
}

// raw queues data as one event as is.
func (s *sse) raw(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.err == nil && s.writing && len(s.pending) >= maxPendingEvents {
		s.idle.Wait()
	}
	if s.err != nil {
		return s.err
	}
	s.start() // no write runs before the first event
	s.pending = append(s.pending, "data: "...)
	s.pending = append(s.pending, data...)
	s.pending = append(s.pending, "\n\n"...)
	if !s.writing {
		s.writing = true
		if s.inline {
			s.drainLocked()
			return s.err
		}
		go s.drain()
	}
	return nil
}

// finishing tells s that the work producing events is over: the events
// still to come (a turn's last: its end, its error) are written by the
// handler's goroutine as it sends them, once those queued before are
// written. The handler waits for them anyway (close), and a goroutine
// handing them over costs two waits for a CPU on a loaded server.
func (s *sse) finishing() {
	s.mu.Lock()
	s.inline = true
	s.mu.Unlock()
}

// drain writes the events queued, those queued meanwhile included, until
// none is left or a write fails.
func (s *sse) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drainLocked()
}

// drainLocked is drain with s.mu held (and released while writing).
func (s *sse) drainLocked() {
	for len(s.pending) > 0 && s.err == nil {
		batch := s.pending
		s.pending = s.spare[:0]
		s.mu.Unlock()
		err := s.write(batch)
		s.mu.Lock()
		s.spare = batch[:0]
		if err != nil {
			s.err = err
		}
		s.idle.Broadcast()
	}
	s.pending = s.pending[:0]
	s.writing = false
	s.idle.Broadcast()
}

// write sends events to the client: one write, one flush.
func (s *sse) write(events []byte) error {
	if s.timeout > 0 {
		// The deadline stays after the last event, bounding the end of
		// the response too; net/http clears it when the response is done.
		if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	if _, err := s.w.Write(events); err != nil {
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

// close waits until every event queued was written, or a write failed,
// and returns that write's error. The handler must not return before.
func (s *sse) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.writing {
		s.idle.Wait()
	}
	return s.err
}
