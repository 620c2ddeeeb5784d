package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/store"
)

// readyTimeout bounds each dependency check of /readyz, so a hung database
// makes the probe fail instead of hang (Kubernetes probes time out too).
const readyTimeout = 2 * time.Second

// Readiness check statuses.
const (
	checkOK            = "ok"
	checkFailed        = "failed"
	checkNotConfigured = "not_configured"
)

// pinger is a dependency that can tell whether it is reachable: the
// conversation stores (sqlite.Conversations, postgres.Conversations) and, when it offers
// one, the knowledge-base service.
type pinger interface {
	Ping(ctx context.Context) error
}

// readyCheck is one dependency's line in the /readyz reply.
type readyCheck struct {
	Status    string  `json:"status"`
	Error     string  `json:"error,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

// readyReply is the /readyz body.
type readyReply struct {
	Status  string                `json:"status"` // ready | degraded | not_ready | draining
	Version string                `json:"version"`
	Checks  map[string]readyCheck `json:"checks,omitempty"`
}

// Drain marks the server as shutting down: from now on /readyz answers 503
// while every other endpoint keeps serving. Call it on SIGTERM, give load
// balancers a few probe periods to stop sending requests, then shut the
// HTTP server down. CutStreams implies it.
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain or CutStreams was called.
func (s *Server) Draining() bool {
	if s.draining.Load() {
		return true
	}
	select {
	case <-s.cut:
		return true
	default:
		return false
	}
}

// readyChecks returns the dependency checks /readyz runs, by name. A nil
// check means the dependency is not configured and does not count.
func (s *Server) readyChecks() map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{"store": s.pingStore, "kb": nil}
	if p, ok := s.store.(pinger); ok {
		checks["store"] = p.Ping
	}
	if s.kb != nil {
		if p, ok := any(s.kb).(pinger); ok {
			checks["kb"] = p.Ping
		} else {
			// The embedded knowledge bases live in a folder: listing it
			// shows the volume is mounted and readable.
			checks["kb"] = func(ctx context.Context) error { _, err := s.kb.Names(ctx); return err }
		}
	}
	// The model and the search engine are checked too, but their failure
	// does not fail readiness (advisoryChecks).
	return checks
}

// pingStore checks a store that has no Ping method with a lookup that finds
// nothing.
func (s *Server) pingStore(ctx context.Context) error {
	_, err := s.store.Conversation(ctx, "readyz")
	if errors.Is(err, memory.ErrNotFound) {
		return nil
	}
	return err
}

// readyError is what /readyz says of a failed check.
func readyError(err error) string {
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return "unreachable"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return "failed: see the server log"
}

func (s *Server) handleReady(c *gin.Context) {
	reply := readyReply{Status: "ready", Version: s.opts.Version}
	if s.Draining() {
		reply.Status = "draining"
		c.JSON(http.StatusServiceUnavailable, reply)
		return
	}
	checks := s.readyChecks()
	reply.Checks = make(map[string]readyCheck, len(checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, check := range checks {
		if check == nil {
			mu.Lock()
			reply.Checks[name] = readyCheck{Status: checkNotConfigured}
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
			defer cancel()
			start := time.Now()
			err := check(ctx)
			rc := readyCheck{Status: checkOK, LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
			if err != nil {
				// Which dependency is down, never its address or user:
				// /readyz needs no key. The log has the error.
				rc.Status, rc.Error = checkFailed, readyError(err)
				s.log.Warn("readiness check failed", "check", name, "err", err)
			}
			mu.Lock()
			reply.Checks[name] = rc
			mu.Unlock()
		})
	}
	wg.Wait()
	status := http.StatusOK
	for _, rc := range reply.Checks {
		if rc.Status == checkFailed {
			reply.Status, status = "not_ready", http.StatusServiceUnavailable
		}
	}
	s.addAdvisoryChecks(c.Request.Context(), &reply) // after: they never fail readiness
	c.JSON(status, reply)
}
