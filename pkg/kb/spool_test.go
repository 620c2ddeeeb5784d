package kb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A spooled upload (FileData.Path) is indexed as its bytes would be; one
// whose file is gone fails alone; stale spool folders are removed at start.
func TestAddSpooledFiles(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	s.Create(ctx, "zy", CreateOptions{})
	spool, err := s.SpoolDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(spool)
	path := filepath.Join(spool, "part-0")
	if err := os.WriteFile(path, []byte(qianText), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := s.AddFiles(ctx, "zy", []FileData{
		{Name: "qian.txt", Path: path},
		{Name: "gone.txt", Path: filepath.Join(spool, "part-1")},
	}, AddOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Added, []string{"qian.txt"}) || res.Failed["gone.txt"] == nil {
		t.Errorf("added %v, failed %v", res.Added, res.Failed)
	}
	if rs := search(t, s, "潜龙勿用", "zy"); len(rs) == 0 || rs[0].File != "qian.txt" {
		t.Errorf("search: %+v", rs)
	}
	if got, err := os.ReadFile(filepath.Join(s.cfg.Dir, "zy", "content", "qian.txt")); err != nil || string(got) != qianText {
		t.Errorf("original: %v", err)
	}

	old := filepath.Join(s.cfg.Dir, spoolDir, "upload-old")
	os.MkdirAll(old, 0o700)
	past := time.Now().Add(-2 * spoolStale)
	os.Chtimes(old, past, past)
	removeStaleSpools(s.cfg.Dir, time.Now())
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("stale spool folder kept: %v", err)
	}
	if _, err := os.Stat(spool); err != nil {
		t.Errorf("a fresh spool folder was removed: %v", err)
	}
}
