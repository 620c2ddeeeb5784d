package main

import (
	"context"
	"errors"
	"io"
)

// runKBCommand runs "mixchat kb ..." on the configured data directory.
func runKBCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("kb: not wired yet")
}
