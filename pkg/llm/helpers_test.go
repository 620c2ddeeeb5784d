package llm_test

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedData returns the path of rel under the project's shared data folder
// (../shared/data beside the module root), skipping the test when absent.
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
			t.Skip("go.mod not found above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s not available (%v): skipping", rel, err)
	}
	return p
}

func readShared(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(sharedData(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
