package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/sseclient"
)

// harnessConfig is the configuration of an app under test in dir whose
// default model is the test upstream at upstream; the harness makes its
// own data (no demo knowledge base).
func harnessConfig(dir, upstream string) config.Config {
	cfg := config.DefaultConfig()
	cfg.Server.DataDir, cfg.Demo = dir, false
	cfg.LLM.BaseURL, cfg.LLM.Model = upstream, "test"
	return cfg
}

// loopbackApp is an app under test served on a free loopback port.
type loopbackApp struct {
	*app.App
	base string // http://127.0.0.1:PORT
	hs   *http.Server
}

// startLoopbackApp validates cfg, builds the app with app.New (the
// constructor of mixchat serve) and serves it on loopback.
func startLoopbackApp(ctx context.Context, cfg config.Config, opts app.Options) (*loopbackApp, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a, err := app.New(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close()
		return nil, err
	}
	hs := &http.Server{Handler: a.Server.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return &loopbackApp{App: a, base: "http://" + ln.Addr().String(), hs: hs}, nil
}

// streamEvents posts body to url and hands the events of the streamed reply
// to fn (sseclient.Decode); what names the endpoint in the error of a
// request that failed.
func streamEvents[E any](ctx context.Context, hc *http.Client, url, what string, body any, fn func(E) (bool, error)) error {
	stream, err := sseclient.Open(ctx, hc, url, body)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer stream.Close()
	return sseclient.Decode(stream, fn)
}

// close stops serving, then closes the app.
func (l *loopbackApp) close() {
	l.hs.Close()
	l.App.Close()
}
