package search

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedData returns the shared evaluation data folder (../shared/data from
// the module root), skipping the test when it is absent.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("module root not found")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s absent (%v): skipping", p, err)
	}
	return p
}
