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
var domainWords = regexp.MustCompile(`卦|爻|彖|周易|易学|(?i:hexagram|restaurant|hotel|guest ?house|wi-?fi)`)

// testSupport reports whether dir (slash-separated, module-relative) is a
// test-support package (storetest, llmtest, catalogtest…): its fixtures
// are tests' data, which may be one domain's.
func testSupport(dir string) bool { return strings.HasSuffix(dir, "test") }

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
			if testSupport(filepath.ToSlash(filepath.Dir(rel))) {
				return nil
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

// TestDomainWordsCatch: the words are found in code and comments, in any
// case, and only test-support packages are left out.
func TestDomainWordsCatch(t *testing.T) {
	for line, want := range map[string]bool{
		`const classifiers = "卦"`:                true,
		`// "the Hotel" resolves to …`:           true,
		`re := regexp.MustCompile("WiFi|wi-fi")`: true,
		`// a Guesthouse`:                        true,
		`// 劳动法第三十六条`:                            false,
		`// Article I, Section 8`:                false,
	} {
		if got := domainWords.MatchString(line); got != want {
			t.Errorf("%q: match %v, want %v", line, got, want)
		}
	}
	for dir, want := range map[string]bool{"pkg/memory/storetest": true, "pkg/llm/llmtest": true, "pkg/kb": false, "internal/app": false} {
		if got := testSupport(dir); got != want {
			t.Errorf("testSupport(%q) = %v, want %v", dir, got, want)
		}
	}
}
