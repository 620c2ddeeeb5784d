package search

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Pinger is a searcher that can tell cheaply whether its service answers
// (a self-hosted SearxNG that may be stopped); commercial APIs are not
// probed, as every call costs.
type Pinger interface {
	Ping(ctx context.Context) error
}

// probeTTL is how long a probe's result is reused: /readyz and the engine
// list are asked often, the answer changes rarely.
const probeTTL = 10 * time.Second

// probeTimeout bounds one probe.
const probeTimeout = 2 * time.Second

// Ping asks the instance's /healthz (SearxNG's health endpoint; an older
// searx answers it with 404, which still shows it is up). The error names
// neither the address nor the network error, which would: it is shown to
// clients.
func (s *SearxNG) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/healthz", nil)
	if err != nil {
		return fmt.Errorf("search engine %q: base_url is not a valid URL", s.name)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("search engine %q does not answer (is it running?)", s.name)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("search engine %q answers HTTP %d", s.name, resp.StatusCode)
	}
	return nil
}

// probe is the cached result of an engine's last Ping.
type probe struct {
	mu   sync.Mutex
	at   time.Time
	err  error
	busy chan struct{} // closed when the probe in flight ends; nil when none
}

// check returns p's cached result, pinging when it is older than probeTTL;
// concurrent callers share one ping.
func (p *probe) check(ctx context.Context, pinger Pinger) error {
	p.mu.Lock()
	if !p.at.IsZero() && time.Since(p.at) < probeTTL {
		err := p.err
		p.mu.Unlock()
		return err
	}
	if busy := p.busy; busy != nil {
		p.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	}
	busy := make(chan struct{})
	p.busy = busy
	p.mu.Unlock()

	err := pinger.Ping(context.WithoutCancel(ctx))

	p.mu.Lock()
	p.at, p.err, p.busy = time.Now(), err, nil
	p.mu.Unlock()
	close(busy)
	return err
}

// Check reports whether the engine called name ("" means the default) can
// be used now: it is configured, has what it needs, and, when it is a
// service that can be probed (SearxNG), answers — checked at most every
// few seconds.
func (s *Service) Check(ctx context.Context, name string) error {
	sr, err := s.Searcher(name)
	if err != nil {
		return err
	}
	pinger, ok := sr.(Pinger)
	if !ok {
		return nil
	}
	if name == "" {
		name = s.def
	}
	return s.engines[name].probe.check(ctx, pinger)
}

// EnginesNow lists the engines as Engines does, with an engine that can be
// probed and does not answer marked unavailable, the reason saying so.
func (s *Service) EnginesNow(ctx context.Context) []EngineInfo {
	out := s.Engines()
	var wg sync.WaitGroup
	for i := range out {
		if !out[i].Available {
			continue
		}
		if _, ok := s.engines[out[i].Name].searcher.(Pinger); !ok {
			continue
		}
		wg.Go(func() {
			if err := s.Check(ctx, out[i].Name); err != nil {
				out[i].Available, out[i].Reason = false, err.Error()
			}
		})
	}
	wg.Wait()
	return out
}
