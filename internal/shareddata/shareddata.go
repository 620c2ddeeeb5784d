// Package shareddata finds the project's shared evaluation data for tests:
// the folder ../shared/data beside the module root (the Zhouyi texts,
// SciFact, ...), which is not part of the repository. Tests that need it
// call Path and are skipped where it is absent, so the suite runs anywhere.
//
// Only tests import this package.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Path returns the path of rel (slash-separated) under the shared data
// folder, ../shared/data relative to the module root (the nearest
// directory holding go.mod above the test's working directory). It skips
// tb when there is no module root or rel is absent there.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("shared data: no go.mod above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared data %s is absent (%v): skipping", p, err)
	}
	return p
}
