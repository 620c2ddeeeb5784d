package app

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLLMTransportReusesConnections: calls to one model endpoint, more at
// once than net/http's default transport keeps idle (2), go out again on
// the same connections instead of opening new ones.
func TestLLMTransportReusesConnections(t *testing.T) {
	const inFlight = 12
	var opened atomic.Int64
	release := make(chan struct{})
	var arrived sync.WaitGroup
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	tr := newLLMTransport()
	hc := &http.Client{Transport: tr}
	defer hc.CloseIdleConnections()
	wave := func() {
		t.Helper()
		arrived.Add(inFlight)
		var done sync.WaitGroup
		for range inFlight {
			done.Add(1)
			go func() {
				defer done.Done()
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				var b [8]byte
				for {
					if _, err := resp.Body.Read(b[:]); err != nil {
						break
					}
				}
				resp.Body.Close()
			}()
		}
		arrived.Wait() // every call holds a connection at once
		release <- struct{}{}
		for range inFlight - 1 {
			release <- struct{}{}
		}
		done.Wait()
	}
	wave()
	if got := opened.Load(); got != inFlight {
		t.Fatalf("first wave opened %d connections, want %d", got, inFlight)
	}
	wave()
	if got := opened.Load(); got != inFlight {
		t.Errorf("second wave opened %d more connections, want 0 (the first wave's kept idle)", got-inFlight)
	}
}
