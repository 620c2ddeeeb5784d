package main

import (
	"context"
	"io"

	"github.com/mixchat/mixchat/internal/app"
)

// runKBCommand runs "mixchat kb ..." on the knowledge bases of the
// configured data directory, in this process (no server needed).
func runKBCommand(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs, f := appFlags("kb", kbUsage+"\nFlags:\n", stderr)
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
