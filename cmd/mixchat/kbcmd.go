package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/internal/config"
)

// runKBCommand runs "mixchat kb ..." on the knowledge bases of the
// configured data directory, in this process (no server needed).
func runKBCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), kbUsage, "\nFlags:\n"); fs.PrintDefaults() }
	var f config.Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if wantsHelp(fs.Args()) || (fs.NArg() > 0 && fs.Arg(0) == "help") {
		// Every subcommand parses its flags before it touches the
		// knowledge bases, so help opens nothing.
		return runKB(ctx, nil, fs.Args(), stdout, stderr)
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	svc, err := app.NewKB(cfg, app.NewModels(cfg.LLM))
	if err != nil {
		return err
	}
	defer svc.Close()
	return runKB(ctx, svc, fs.Args(), stdout, stderr)
}
