package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// domainWords are words of one domain (the demo's, and the examples the
// follow-up rewrite was once fitted to) that no general package may hold:
// what a domain adds is a profile, data shipped next to its documents
// (docs/structure.md).
var domainWords = regexp.MustCompile(`卦|爻|彖|(?i:hexagram|restaurant|hotel|guest house|wifi)`)

// domainExempt are the packages whose domain words are being moved out
// (each must leave this list as its change lands).
var domainExempt = []string{"pkg/extractive/", "pkg/memory/"}

// TestNoDomainWords: no non-test Go file under pkg/ or internal/ (but the
// evals, internal/eval*) names one domain.
func TestNoDomainWords(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []string{"pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasPrefix(rel, "internal/eval") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			for _, ex := range domainExempt {
				if strings.HasPrefix(rel, ex) {
					return nil
				}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if m := domainWords.FindString(line); m != "" {
					t.Errorf("%s:%d names a domain (%q): move it into a profile", rel, i+1, m)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
