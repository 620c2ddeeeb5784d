package kb

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNameLimits: names are limited in bytes (what a file system takes),
// not only characters, and invisible or control characters are refused;
// those refusals are bad requests, not attacks.
func TestNameLimits(t *testing.T) {
	zh := func(n int) string { return strings.Repeat("乾", n) }
	for _, tc := range []struct {
		name  string
		file  bool
		ok    bool
		cause string
	}{
		{name: zh(85), ok: true},            // 255 bytes
		{name: zh(86), cause: "258 bytes"},  // 86 characters, 258 bytes
		{name: zh(100), cause: "300 bytes"}, // the 100-character KB name
		{name: zh(90) + ".md", file: true, cause: "273 bytes"},
		{name: zh(80) + "/" + zh(80) + ".md", file: true, ok: true},
		{name: "a\x00b", cause: "control"},
		{name: "a\tb", cause: "control"},
		{name: "ab\u200b", cause: "format"},
		{name: "evil\u202egpj.exe", file: true, cause: "format"},
		{name: strings.Repeat("a/", 600) + "a", file: true, cause: "1024 bytes"},
	} {
		check := ValidName
		if tc.file {
			check = ValidFileName
		}
		err := check(tc.name)
		if tc.ok {
			if err != nil {
				t.Errorf("%.20q: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidName) || !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.cause) {
			t.Errorf("%.20q: err %v; want ErrInvalidName and ErrBadRequest saying %q", tc.name, err, tc.cause)
		}
	}
	if err := ValidFileName("../x"); !errors.Is(err, ErrInvalidName) || errors.Is(err, ErrBadRequest) {
		t.Errorf("../x: %v; want ErrInvalidName only (leaving the folder)", err)
	}
}

// TestLongNameRefusedBeforeWriting: a file name the file system refuses is
// refused whole: no row, nothing listed, a re-upload under a good name
// works.
func TestLongNameRefusedBeforeWriting(t *testing.T) {
	ctx := context.Background()
	s := newService(t, testConfig(t), newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "zy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("乾", 90) + ".txt"
	res, err := s.AddFiles(ctx, "zy", []FileData{{Name: long, Data: []byte(qianText)}}, AddOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Failed[long], ErrBadRequest) {
		t.Fatalf("failed = %v; want a bad request for the long name", res.Failed)
	}
	if files, err := s.Files(ctx, "zy"); err != nil || len(files) != 0 {
		t.Fatalf("files after the refused upload: %v, %v", files, err)
	}
	// placeable catches what the name rules miss.
	if err := placeable(filepath.Join(t.TempDir(), strings.Repeat("x", 300))); !errors.Is(err, ErrBadRequest) || strings.Contains(err.Error(), "/") {
		t.Errorf("placeable(300-byte name) = %v; want a bad request naming no path", err)
	}
}

// TestStaleUploadsRemovedAtOpen: a temporary upload left by a killed
// process is removed when the knowledge base is opened again, and never
// served; links in the content folder are not followed.
func TestStaleUploadsRemovedAtOpen(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s1 := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s1.Create(ctx, "zy", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s1, "zy", FileData{Name: "qian.txt", Data: []byte(qianText)})
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	content := filepath.Join(cfg.Dir, "zy", contentDir)
	stale := filepath.Join(content, ".upload-123")
	fresh := filepath.Join(content, ".upload-456")
	secret := filepath.Join(t.TempDir(), "secret.txt")
	for _, p := range []string{stale, fresh, secret} {
		if err := os.WriteFile(p, []byte("leftover"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(content, "link.txt")); err != nil {
		t.Fatal(err)
	}

	s2 := newService(t, cfg, newFakeEmbedder(), nil)
	o, err := s2.Original(ctx, "zy", "qian.txt") // opens the KB
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(o); string(b) != qianText {
		t.Errorf("qian.txt = %q", b)
	}
	o.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale upload is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("an upload in progress (fresh) was removed: %v", err)
	}
	for _, name := range []string{".upload-456", "link.txt"} {
		if o, err := s2.Original(ctx, "zy", name); !errors.Is(err, ErrNotFound) {
			if o != nil {
				o.Close()
			}
			t.Errorf("%s: err %v; want ErrNotFound", name, err)
		}
	}
}
