// Package archtest keeps mixchat's package structure honest: it reads the
// module's import graph with `go list`, checks the rules of which package
// may depend on which (its test fails when one is broken), and renders the
// package table of docs/architecture.md (go generate writes it; the test
// fails when the written table is out of date).
package archtest

//go:generate go run ./gen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the module path; the rules and the table name packages
// relative to it.
const Module = "github.com/mixchat/mixchat"

// Package is what `go list` says of one of the module's packages. Paths
// in Imports, TestImports, XTestImports and Deps are full import paths.
type Package struct {
	ImportPath   string
	Doc          string
	Imports      []string // the package's own (non-test) imports
	TestImports  []string // its in-package tests' imports
	XTestImports []string // its external (_test package) tests' imports
	Deps         []string // everything the non-test package depends on, transitively
	Error        *struct{ Err string }
}

// Rel returns path relative to the module ("pkg/kb"); paths outside the
// module are returned as they are.
func Rel(path string) string {
	if path == Module {
		return "."
	}
	return strings.TrimPrefix(path, Module+"/")
}

// ModuleRoot returns the directory of the module's go.mod, looking up from
// dir.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("archtest: no go.mod above the working directory")
		}
		dir = up
	}
}

// List runs `go list` over every package of the module rooted at root.
func List(ctx context.Context, root string) ([]Package, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-json=ImportPath,Doc,Imports,TestImports,XTestImports,Deps,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// within reports whether path is the package prefix (relative to the
// module) or one under it.
func within(path, prefix string) bool {
	full := Module + "/" + prefix
	return path == full || strings.HasPrefix(path, full+"/")
}

// Rules the import graph keeps; Check reports every break of them.
var (
	// NoOrchestrator: the answerers and what measures or embeds them share
	// pkg/rag's vocabulary with the Mixer, never the Mixer itself.
	NoOrchestrator = []string{"pkg/kb", "pkg/search", "pkg/chat", "pkg/obs", "pkg/lc"}
	// NoExtractive: the packages of the turn's path run whichever model
	// implementation they are given; the offline stand-ins are chosen in
	// the wiring.
	NoExtractive = []string{"pkg/mix", "pkg/turn", "pkg/kb", "pkg/search", "pkg/chat", "pkg/memory"}
	// ExtractiveWiring are the packages (with those under them) that may
	// import pkg/extractive outside tests, besides the evals
	// (internal/eval*) and pkg/extractive's own.
	ExtractiveWiring = []string{"internal/app", "cmd/mixchat-eval", "pkg/extractive"}
	// RagImports are the only packages of the module pkg/rag may import.
	RagImports = []string{"pkg/llm"}
)

// Check returns every break of the import rules in pkgs (the module's
// packages as List returns them), one line each; none means the graph
// keeps them. A package a rule names that is missing from pkgs is a break
// too, so that a rename cannot switch a rule off.
func Check(pkgs []Package) []string {
	var bad []string
	byPath := map[string]Package{}
	for _, p := range pkgs {
		byPath[Rel(p.ImportPath)] = p
		if p.Error != nil {
			bad = append(bad, fmt.Sprintf("%s: %s", Rel(p.ImportPath), p.Error.Err))
		}
	}
	missing := map[string]bool{}
	get := func(rel string) (Package, bool) {
		p, ok := byPath[rel]
		if !ok && !missing[rel] {
			missing[rel] = true
			bad = append(bad, fmt.Sprintf("%s: no such package (a rule names it)", rel))
		}
		return p, ok
	}
	for _, rel := range NoOrchestrator {
		if p, ok := get(rel); ok {
			for _, d := range p.Deps {
				if within(d, "pkg/mix") {
					bad = append(bad, fmt.Sprintf("%s depends on %s (the orchestrator); share pkg/rag's types instead", rel, Rel(d)))
				}
			}
		}
	}
	for _, rel := range NoExtractive {
		if p, ok := get(rel); ok {
			for _, d := range p.Deps {
				if within(d, "pkg/extractive") {
					bad = append(bad, fmt.Sprintf("%s depends on %s; only the wiring chooses the offline stand-ins", rel, Rel(d)))
				}
			}
		}
	}
	if p, ok := get("pkg/auth"); ok {
		for _, d := range p.Deps {
			if within(d, "pkg/llm") {
				bad = append(bad, fmt.Sprintf("pkg/auth depends on %s; metering is wired in internal/app", Rel(d)))
			}
		}
	}
	if p, ok := get("pkg/rag"); ok {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, Module+"/") && !slices.Contains(RagImports, Rel(imp)) {
				bad = append(bad, fmt.Sprintf("pkg/rag imports %s; it is a leaf (only %s)", Rel(imp), strings.Join(RagImports, ", ")))
			}
		}
	}
	for _, p := range pkgs {
		rel := Rel(p.ImportPath)
		for _, imp := range p.Imports {
			if within(p.ImportPath, "pkg") && within(imp, "internal") {
				bad = append(bad, fmt.Sprintf("%s imports %s; nothing under pkg/ imports internal/", rel, Rel(imp)))
			}
			if within(imp, "pkg/extractive") && !wiring(p.ImportPath) {
				bad = append(bad, fmt.Sprintf("%s imports %s; only the wiring (%s, internal/eval*) and tests do", rel, Rel(imp), strings.Join(ExtractiveWiring, ", ")))
			}
		}
	}
	return bad
}

// wiring reports whether the package path may import pkg/extractive.
func wiring(path string) bool {
	return strings.HasPrefix(Rel(path), "internal/eval") ||
		slices.ContainsFunc(ExtractiveWiring, func(w string) bool { return within(path, w) })
}

// Markers around the generated table in docs/architecture.md.
const (
	BeginMarker = "<!-- package table: generated by `go generate ./internal/archtest` from `go list`; do not edit -->"
	EndMarker   = "<!-- end of package table -->"
)

// DocPath is where the package table lives, relative to the module root.
const DocPath = "docs/architecture.md"

// Table renders the package table: each package of the module with its
// synopsis (the first sentence of its package comment) and the module's
// packages it imports (not counting its tests).
func Table(pkgs []Package) string {
	var b strings.Builder
	b.WriteString("| package | what | imports |\n| --- | --- | --- |\n")
	for _, p := range pkgs {
		var ours []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, Module+"/") {
				ours = append(ours, Rel(imp))
			}
		}
		imports := "—"
		if len(ours) > 0 {
			imports = strings.Join(ours, ", ")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", Rel(p.ImportPath), strings.ReplaceAll(p.Doc, "|", `\|`), imports)
	}
	return b.String()
}

// Splice returns doc with the text between its markers replaced by table.
func Splice(doc []byte, table string) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, BeginMarker)
	j := strings.Index(s, EndMarker)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s: no generated block (%q ... %q)", DocPath, BeginMarker, EndMarker)
	}
	i += len(BeginMarker)
	return []byte(s[:i] + "\n" + table + s[j:]), nil
}
