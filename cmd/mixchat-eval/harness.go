package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/internal/sseclient"
	"github.com/mixchat/mixchat/pkg/llm"
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
	// serve's http.Server (timeouts), but not its per-client connection
	// cap (Listener): the harnesses' load comes from one address.
	hs := a.Server.NewHTTPServer()
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

// mixStreamEvent is what the evals read of a /chat/mix_chat stream event.
type mixStreamEvent struct {
	Type     string             `json:"type"`
	Text     string             `json:"text"`
	State    string             `json:"state"`
	Answerer string             `json:"answerer"`
	Ms       float64            `json:"ms"`
	Error    string             `json:"error"`
	Usage    *llm.Usage         `json:"usage"`
	Timings  map[string]float64 `json:"timings"`
}

// streamMix posts body to the /chat/mix_chat of the server at base, hands
// fn every event before the done event (an error of fn ends the stream
// with it) and returns the done event once the
// stream has ended. An error event, a done event with an error and a
// stream that ends without a done event are errors.
func streamMix(ctx context.Context, hc *http.Client, base string, body any, fn func(mixStreamEvent) error) (mixStreamEvent, error) {
	var done *mixStreamEvent
	err := streamEvents(ctx, hc, base+"/chat/mix_chat", "mix_chat", body, func(ev mixStreamEvent) (bool, error) {
		switch {
		case ev.Type == "error", ev.Type == "done" && ev.Error != "":
			return true, fmt.Errorf("mix_chat: %s", ev.Error)
		case ev.Type == "done":
			done = &ev
		case done == nil:
			if err := fn(ev); err != nil {
				return true, err
			}
		}
		return false, nil
	})
	if err != nil {
		return mixStreamEvent{}, err
	}
	if done == nil {
		return mixStreamEvent{}, errors.New("mix_chat: stream ended without a done event")
	}
	return *done, nil
}
