package kb

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Writes never follow a link in the content folder: an upload through a
// linked folder, or onto a linked file, fails and writes nothing outside.
func TestUploadRefusesLinks(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "k", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	content := filepath.Join(cfg.Dir, "k", contentDir)
	outside := t.TempDir()
	target := filepath.Join(outside, "target.txt")
	os.WriteFile(target, []byte("untouched"), 0o644)
	if err := os.Symlink(outside, filepath.Join(content, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(content, "a.txt")); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []AddOptions{{}, {SaveOnly: true}, {Override: true}} {
		res, err := s.AddFiles(ctx, "k", []FileData{
			{Name: "link/pwn.txt", Data: []byte(qianText)},
			{Name: "link/deeper/pwn.txt", Data: []byte(qianText)},
			{Name: "a.txt", Data: []byte(kunText)},
		}, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"link/pwn.txt", "link/deeper/pwn.txt", "a.txt"} {
			if res.Failed[f] == nil {
				t.Errorf("%+v: %s was accepted through a link: %+v", opts, f, res)
			}
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("the upload wrote outside the data directory: %v", entries)
	}
	if b, _ := os.ReadFile(target); string(b) != "untouched" {
		t.Errorf("the file behind the link was overwritten: %q", b)
	}
	if files, _ := s.Files(ctx, "k"); len(files) != 0 {
		t.Errorf("documents listed: %+v", files)
	}
}

// Deletes never follow a link either, and remove only an original the
// knowledge base keeps: not a file behind a link, not a temporary upload.
func TestDeleteRefusesLinks(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	s := newService(t, cfg, newFakeEmbedder(), nil)
	if _, err := s.Create(ctx, "k", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	content := filepath.Join(cfg.Dir, "k", contentDir)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(content, "link"))
	os.Symlink(secret, filepath.Join(content, "x.txt"))
	tmp := filepath.Join(content, ".upload-123")
	os.WriteFile(tmp, []byte("in flight"), 0o644)
	saved := filepath.Join(content, "saved.txt")
	if _, err := s.AddFiles(ctx, "k", []FileData{{Name: "saved.txt", Data: []byte(qianText)}}, AddOptions{SaveOnly: true}, nil); err != nil {
		t.Fatal(err)
	}

	failed, err := s.DeleteFiles(ctx, "k", []string{"link/secret.txt", "x.txt", ".upload-123", "saved.txt"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"link/secret.txt", "x.txt", ".upload-123"} {
		if failed[f] == nil {
			t.Errorf("%s: no failure reported", f)
		}
	}
	if failed["saved.txt"] != nil {
		t.Errorf("saved.txt, an original the knowledge base keeps: %v", failed["saved.txt"])
	}
	for _, p := range []string{secret, tmp} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was deleted: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(content, "x.txt")); err != nil {
		t.Errorf("the link itself was deleted: %v", err)
	}
	if _, err := os.Stat(saved); !os.IsNotExist(err) {
		t.Errorf("saved.txt still there: %v", err)
	}
}
