package kb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// walkContentFiles is contentFiles as filepath.WalkDir makes it.
func walkContentFiles(dir string) ([]string, error) {
	var out []string
	root := filepath.Join(dir, contentDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func TestContentFilesAsWalkDir(t *testing.T) {
	dir := t.TempDir()
	check := func(what string) {
		t.Helper()
		got, gerr := contentFiles(dir)
		want, werr := walkContentFiles(dir)
		if !slices.Equal(got, want) || (gerr == nil) != (werr == nil) {
			t.Errorf("%s: %q %v, WalkDir %q %v", what, got, gerr, want, werr)
		}
	}
	check("no folder")
	root := filepath.Join(dir, contentDir)
	for _, f := range []string{"b.md", "a.txt", "sub/x.md", "sub/deeper/y.md", ".hidden", ".upload-1", "sub/.tmp", ".dir/z.md", "A.md", "sub2/q.md"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(root, "empty"), 0o755)
	os.Symlink(filepath.Join(root, "sub"), filepath.Join(root, "link"))
	os.Symlink(filepath.Join(root, "b.md"), filepath.Join(root, "flink.md"))
	check("tree")
	os.RemoveAll(root)
	os.WriteFile(root, []byte("x"), 0o644)
	check("a file")
}
