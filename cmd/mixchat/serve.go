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

// commandFlags is a command's flag set: errors and -h go to stderr (or
// where SetOutput points them) with usage, when there is one, followed by
// the flags.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if usage != "" {
		fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	}
	return fs
}

// appFlags is the flag set of a command that builds the app from the
// configuration: commandFlags with --addr, --data and --config.
func appFlags(name, usage string, stderr io.Writer) (*flag.FlagSet, *config.Flags) {
	fs := commandFlags(name, usage, stderr)
	var f config.Flags
	f.Register(fs)
	return fs, &f
}

func runServe(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs, f := appFlags("serve", serveUsage, stderr)
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
	a, err := app.New(ctx, cfg, app.Options{Log: app.NewLogger(cfg.Log, stderr), Version: buildVersion()})
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
