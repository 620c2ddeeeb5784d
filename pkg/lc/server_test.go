package lc_test

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/server"
)

// demoServer is a mixchat server as `mixchat serve` builds it on a first
// run (through the same constructor): the offline model, SQLite memory,
// the demo's zhouyi knowledge base (the default one) and the Ten Wings
// pages for the local search engine.
type demoServer struct {
	*server.Server
	KB  *kb.Service
	app *app.App
	dir string
}

func (s *demoServer) Close() error {
	err := s.app.Close()
	os.RemoveAll(s.dir)
	return err
}

func newDemoServer() (*demoServer, error) {
	dir, err := os.MkdirTemp("", "mixchat-lc-")
	if err != nil {
		return nil, err
	}
	cfg := config.DefaultConfig()
	cfg.Server.DataDir = dir
	if err := cfg.Validate(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	a, err := app.New(context.Background(), cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &demoServer{Server: a.Server, KB: a.KB, app: a, dir: dir}, nil
}
