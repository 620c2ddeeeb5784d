// Package golden compares a test's output with a golden file and, when the
// test runs with -update, rewrites the file first (go/printer's habit).
//
// A test package that imports it gets the -update flag from it and must
// not define its own. Only tests import this package.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Check fails tb when got differs from the contents of the file at path.
// With -update it writes got to path first (creating its folder).
func Check(tb testing.TB, path, got string) {
	tb.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		tb.Errorf("%s differs from the golden file:\n%s", path, got)
	}
}
