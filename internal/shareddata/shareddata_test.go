package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPathFindsOrSkips(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	want := filepath.Join(root, "..", "shared", "data")
	if _, err := os.Stat(want); err != nil {
		t.Skipf("no shared data folder here (%v)", err)
	}
	if got := Path(t, "."); got != want {
		t.Errorf("Path(.) = %s, want %s", got, want)
	}
}

func TestPathSkipsWhenAbsent(t *testing.T) {
	ok := t.Run("absent", func(t *testing.T) {
		Path(t, "no/such/data-set")
		t.Error("Path returned for data that does not exist")
	})
	if !ok {
		t.Error("the subtest failed instead of skipping")
	}
}
