// Command gen writes the package table of docs/architecture.md from
// `go list` (run by `go generate ./internal/archtest`).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mixchat/mixchat/internal/archtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := archtest.ModuleRoot(".")
	if err != nil {
		return err
	}
	pkgs, err := archtest.List(context.Background(), root)
	if err != nil {
		return err
	}
	path := filepath.Join(root, archtest.DocPath)
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := archtest.Splice(doc, archtest.Table(pkgs))
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
