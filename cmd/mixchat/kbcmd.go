package main

import (
	"context"
	"flag"
	"io"
)

// runKBCommand runs "mixchat kb ..." on the knowledge bases of the
// configured data directory, in this process (no server needed).
func runKBCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := f.load()
	if err != nil {
		return err
	}
	svc, err := newKB(cfg, newModels(cfg.LLM))
	if err != nil {
		return err
	}
	defer svc.Close()
	return runKB(ctx, svc, fs.Args(), stdout, stderr)
}
