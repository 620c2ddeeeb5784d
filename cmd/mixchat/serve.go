package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
)

const serveUsage = `Usage:
  mixchat serve [--addr HOST:PORT] [--data DIR] [--config FILE]

Runs the HTTP server (the web app, the Chatchat API, /v1 and /metrics)
until interrupted, then shuts down gracefully.

Flags:
`

// commandFlags is a command's flag set: errors and -h go to stderr with
// usage, followed by the flags.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return fs
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("serve", serveUsage, stderr)
	var f config.Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, app.Options{Log: app.NewLogger(cfg.Log, stderr), Version: version})
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return a.Serve(ctx, ln)
}
