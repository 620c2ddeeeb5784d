package server

import (
	"context"
	"sync"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Advisory checks of /readyz: the default model and the default search
// engine. They are reported, without addresses, but a failure leaves the
// server ready ("degraded", HTTP 200): they are external services every
// replica shares, and the server still answers without them (the search
// answerer drops out of the mix; a model outage is the provider's), so
// taking replicas out of a load balancer would not help.

// statusDegraded is /readyz's status when only advisory checks fail.
const statusDegraded = "degraded"

// modelPingTTL is how long the model's reachability is reused: a probe
// every few seconds must not become a request to a paid API each time.
const modelPingTTL = 15 * time.Second

// modelPinger is a model that can check cheaply that its API answers
// (llm.Client).
type modelPinger interface {
	Ping(ctx context.Context) error
}

// cachedPing is the last result of a check, reused for a while.
type cachedPing struct {
	mu  sync.Mutex
	key string
	at  time.Time
	err error
}

// get returns the cached result for key while it is fresh, else runs
// check and keeps its result.
func (p *cachedPing) get(ctx context.Context, key string, ttl time.Duration, check func(context.Context) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.key == key && !p.at.IsZero() && time.Since(p.at) < ttl {
		return p.err
	}
	err := check(ctx)
	p.key, p.at, p.err = key, time.Now(), err
	return err
}

// pingerOf finds a modelPinger in m or the models it wraps (the
// observability and metering wrappers have Unwrap).
func pingerOf(m llm.Model) modelPinger {
	for range 8 {
		if p, ok := m.(modelPinger); ok {
			return p
		}
		u, ok := m.(interface{ Unwrap() llm.Model })
		if !ok {
			return nil
		}
		m = u.Unwrap()
	}
	return nil
}

// advisoryChecks returns the checks whose failure degrades /readyz but
// does not fail it, by name; a nil check is not configured (the offline
// model has nothing to reach; a server without search).
func (s *Server) advisoryChecks() map[string]func(context.Context) error {
	checks := map[string]func(context.Context) error{"model": nil}
	if s.models != nil {
		name := s.models.Default()
		if m, _, err := s.models.Get(name); err == nil {
			if p := pingerOf(m); p != nil {
				checks["model"] = func(ctx context.Context) error {
					return s.modelPing.get(ctx, name, modelPingTTL, p.Ping)
				}
			}
		}
	}
	if s.search != nil {
		checks["search"] = func(ctx context.Context) error { return s.search.Check(ctx, "") }
	}
	return checks
}

// addAdvisoryChecks runs the advisory checks into reply, marking a ready
// reply degraded when one fails.
func (s *Server) addAdvisoryChecks(ctx context.Context, reply *readyReply) {
	checks := s.advisoryChecks()
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for name, check := range checks {
		if check == nil {
			mu.Lock()
			reply.Checks[name] = readyCheck{Status: checkNotConfigured}
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, readyTimeout)
			defer cancel()
			start := time.Now()
			err := check(ctx)
			rc := readyCheck{Status: checkOK, LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
			if err != nil {
				rc.Status, rc.Error = checkFailed, err.Error()
				s.log.Warn("readiness check failed", "check", name, "err", err)
			}
			mu.Lock()
			reply.Checks[name] = rc
			failed = failed || err != nil
			mu.Unlock()
		})
	}
	wg.Wait()
	if failed && reply.Status == "ready" {
		reply.Status = statusDegraded
	}
}
