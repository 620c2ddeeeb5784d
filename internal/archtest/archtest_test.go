package archtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var graph = sync.OnceValues(func() ([]Package, error) {
	root, err := ModuleRoot(".")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return List(ctx, root)
})

// moduleGraph returns the module's packages, skipping the test when there
// is no go command to list them with.
func moduleGraph(t *testing.T) []Package {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: the import graph cannot be listed (", err, ")")
	}
	pkgs, err := graph()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestImportRules checks the module's import graph against the rules.
func TestImportRules(t *testing.T) {
	for _, b := range Check(moduleGraph(t)) {
		t.Error(b)
	}
}

// TestCheckCatches feeds Check graphs that break each rule, so a rule that
// silently stopped matching (a typo in a path, a field go list no longer
// fills) fails here.
func TestCheckCatches(t *testing.T) {
	m := func(rel string) string { return Module + "/" + rel }
	base := func() []Package {
		var pkgs []Package
		for _, rel := range []string{"pkg/kb", "pkg/search", "pkg/chat", "pkg/obs", "pkg/lc", "pkg/mix", "pkg/turn", "pkg/memory", "pkg/auth", "pkg/rag", "pkg/llm", "internal/app", "internal/evalqa", "cmd/mixchat-eval", "pkg/extractive"} {
			pkgs = append(pkgs, Package{ImportPath: m(rel)})
		}
		return pkgs
	}
	set := func(pkgs []Package, rel string, edit func(*Package)) []Package {
		for i := range pkgs {
			if pkgs[i].ImportPath == m(rel) {
				edit(&pkgs[i])
			}
		}
		return pkgs
	}
	if bad := Check(base()); len(bad) != 0 {
		t.Fatalf("a graph keeping the rules: %v", bad)
	}
	for _, tc := range []struct {
		name string
		pkgs []Package
		want string
	}{
		{"kb on the orchestrator", set(base(), "pkg/kb", func(p *Package) { p.Deps = []string{m("pkg/rag"), m("pkg/mix")} }), "pkg/kb depends on pkg/mix"},
		{"obs on the orchestrator", set(base(), "pkg/obs", func(p *Package) { p.Deps = []string{m("pkg/mix")} }), "pkg/obs depends on pkg/mix"},
		{"pkg on internal", set(base(), "pkg/memory", func(p *Package) { p.Imports = []string{m("internal/sqlrows")} }), "pkg/memory imports internal/sqlrows"},
		{"auth on llm", set(base(), "pkg/auth", func(p *Package) { p.Deps = []string{m("pkg/llm"), m("pkg/text")} }), "pkg/auth depends on pkg/llm"},
		{"auth on llmtest", set(base(), "pkg/auth", func(p *Package) { p.Deps = []string{m("pkg/llm/llmtest")} }), "pkg/auth depends on pkg/llm/llmtest"},
		{"turn on extractive, indirectly", set(base(), "pkg/turn", func(p *Package) { p.Deps = []string{m("pkg/extractive/rewrite")} }), "pkg/turn depends on pkg/extractive/rewrite"},
		{"server imports extractive", append(base(), Package{ImportPath: m("pkg/server"), Imports: []string{m("pkg/extractive")}}), "pkg/server imports pkg/extractive"},
		{"rag not a leaf", set(base(), "pkg/rag", func(p *Package) { p.Imports = []string{"context", m("pkg/llm"), m("pkg/text")} }), "pkg/rag imports pkg/text"},
		{"a ruled package gone", base()[1:], "pkg/kb: no such package"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := Check(tc.pkgs)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.want) {
				t.Errorf("Check = %q, want one break %q", bad, tc.want)
			}
		})
	}
	// The wiring, the evals and tests may import the stand-ins.
	ok := base()
	for _, rel := range []string{"internal/app", "internal/evalqa", "cmd/mixchat-eval"} {
		ok = set(ok, rel, func(p *Package) { p.Imports = []string{m("pkg/extractive")} })
	}
	ok = set(ok, "pkg/kb", func(p *Package) { p.XTestImports = []string{m("pkg/extractive")} })
	if bad := Check(ok); len(bad) != 0 {
		t.Errorf("the wiring importing pkg/extractive: %v", bad)
	}
}

// TestDocTable fails when docs/architecture.md's package table is not what
// `go generate ./internal/archtest` writes.
func TestDocTable(t *testing.T) {
	pkgs := moduleGraph(t)
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, DocPath))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(doc, Table(pkgs))
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Errorf("%s: the package table is out of date; run go generate ./internal/archtest", DocPath)
	}
}

// maxFileLines is the most lines a non-test Go file of the module may have:
// past it a file holds more than one idea and is split.
const maxFileLines = 800

// TestFileLength keeps every non-test Go file of the module within
// maxFileLines.
func TestFileLength(t *testing.T) {
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(b), "\n"); n > maxFileLines {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s has %d lines, more than %d: split it", rel, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
