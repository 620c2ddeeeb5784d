package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// instruction is one Dockerfile instruction: its keyword (lower case),
// flags and the rest of its line.
type instruction struct {
	cmd   string
	flags []string
	args  []string
	line  int
}

// stage is one FROM and what follows it.
type stage struct {
	from  instruction
	instr []instruction
}

func (s stage) find(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// readFile returns the contents of path, failing the test when it cannot.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseDockerfile parses path with BuildKit's parser (the one docker build
// uses) and groups its instructions by stage.
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	res, err := parser.Parse(bytes.NewReader(readFile(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: line %v: %s", path, w.Location, w.Short)
	}
	var stages []stage
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, line: n.StartLine}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
		}
		switch {
		case in.cmd == "from":
			stages = append(stages, stage{from: in})
		case len(stages) == 0 && in.cmd == "arg":
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before FROM", path, in.line, in.cmd)
		default:
			stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, in)
		}
	}
	return stages
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t, "Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages: want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if len(build.from.args) != 3 || !strings.EqualFold(build.from.args[1], "AS") {
		t.Fatalf("first stage %v must be named (FROM image AS build)", build.from.args)
	}
	buildName := build.from.args[2]

	// The runtime stage has the binary, a non-root user, a health check
	// and an entrypoint, and no toolchain.
	if img := final.from.args[0]; strings.Contains(img, "golang") {
		t.Errorf("runtime stage FROM %s carries the Go toolchain", img)
	}
	copied := false
	for _, in := range final.find("copy") {
		copied = copied || slices.Contains(in.flags, "--from="+buildName)
	}
	if !copied {
		t.Errorf("runtime stage copies nothing from the %s stage", buildName)
	}
	users := final.find("user")
	if len(users) == 0 {
		t.Error("runtime stage has no USER: it would run as root")
	} else if u, _, _ := strings.Cut(users[len(users)-1].args[0], ":"); u == "root" || u == "0" {
		t.Errorf("runtime stage runs as %s", u)
	}
	hc := final.find("healthcheck")
	if len(hc) != 1 || len(hc[0].args) < 2 || hc[0].args[0] != "CMD" {
		t.Fatalf("runtime stage needs one HEALTHCHECK CMD, got %+v", hc)
	}
	if probe := strings.Join(hc[0].args[1:], " "); !strings.Contains(probe, "mixchat healthcheck") {
		t.Errorf("HEALTHCHECK runs %q, want the binary's own probe (the image has no curl)", probe)
	}
	if len(final.find("entrypoint")) == 0 {
		t.Error("runtime stage has no ENTRYPOINT")
	}
	expose := final.find("expose")
	if len(expose) == 0 || expose[0].args[0] != "7861" {
		t.Errorf("EXPOSE %+v, want 7861 (server.addr's port)", expose)
	}
	envs := map[string]string{}
	for _, in := range final.find("env") {
		for i := 0; i+1 < len(in.args); i += 3 { // key, value, separator
			envs[in.args[i]] = in.args[i+1]
		}
	}
	if envs["MIXCHAT_SERVER_ADDR"] != "0.0.0.0:7861" {
		t.Errorf("ENV MIXCHAT_SERVER_ADDR = %q, want 0.0.0.0:7861", envs["MIXCHAT_SERVER_ADDR"])
	}

	// The build: a static, trimmed binary of ./cmd/mixchat with the version
	// stamped into main.version.
	var goBuild string
	for _, in := range build.find("run") {
		if s := strings.Join(in.args, " "); strings.Contains(s, "go build") {
			goBuild = s
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "./cmd/mixchat"} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("build command %q lacks %s", goBuild, want)
		}
	}
	if strings.Contains(goBuild, "mixchat-eval") {
		t.Errorf("build command %q builds the benchmarks: the image holds the server binary only", goBuild)
	}
	for _, in := range final.find("copy") {
		if s := strings.Join(in.args, " "); strings.Contains(s, "mixchat-eval") {
			t.Errorf("runtime stage copies %q: the image holds the server binary only", s)
		}
	}
	main := readFile(t, "../cmd/mixchat/main.go")
	if !regexp.MustCompile(`(?m)^var version = `).Match(main) {
		t.Error("cmd/mixchat/main.go has no `var version`: -X main.version would set nothing")
	}
}

// TestStaticBuild checks that ./cmd/mixchat builds without cgo, as the
// Dockerfile builds it: go list resolves every package the binary needs
// with CGO_ENABLED=0 (a package that needs cgo has no files left and
// fails), and each of them is in the build context the Dockerfile's
// dockerignore lets through.
func TestStaticBuild(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Module,Standard,EmbedFiles", "./cmd/mixchat")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("CGO_ENABLED=0 go list ./cmd/mixchat: %v\n%s", err, stderr.String())
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	allowed := dockerignoreIncludes(t, "Dockerfile.dockerignore")
	dec := json.NewDecoder(bytes.NewReader(out))
	ours := 0
	for {
		var p struct {
			ImportPath string
			Dir        string
			Standard   bool
			Module     *struct{ Main bool }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Standard || p.Module == nil || !p.Module.Main {
			continue
		}
		ours++
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if !slices.Contains(allowed, top) {
			t.Errorf("%s (%s) is left out of the build context by Dockerfile.dockerignore (lets in %v)", p.ImportPath, rel, allowed)
		}
	}
	if ours == 0 {
		t.Fatal("go list found no package of this module")
	}
}

// TestServerBinaryHasNoTestCode: the server binary (and so the image) links
// none of the project's test helpers or test upstreams, and no package of
// it imports "testing"; the benchmarks that need them are cmd/mixchat-eval.
func TestServerBinaryHasNoTestCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./cmd/mixchat")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./cmd/mixchat: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		n++
		pkg, imports, _ := strings.Cut(line, " ")
		if strings.HasSuffix(pkg, "test") && strings.HasPrefix(pkg, "github.com/mixchat/mixchat/") ||
			strings.HasPrefix(pkg, "github.com/mixchat/mixchat/internal/shareddata") ||
			strings.HasPrefix(pkg, "github.com/mixchat/mixchat/internal/childserver") ||
			strings.HasPrefix(pkg, "github.com/mixchat/mixchat/cmd/mixchat-eval") {
			t.Errorf("the server binary links %s", pkg)
		}
		if pkg == "testing" || slices.Contains(strings.Fields(imports), "testing") {
			t.Errorf("%s imports testing into the server binary", pkg)
		}
	}
	if n < 50 {
		t.Fatalf("go list printed %d packages: %s", n, out)
	}
}

// dockerignoreIncludes returns the top-level folders and files a
// "ignore everything, then re-include" dockerignore lets in.
func dockerignoreIncludes(t *testing.T, path string) []string {
	t.Helper()
	var in []string
	sawAll := false
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "**" || line == "*":
			sawAll = true
		case strings.HasPrefix(line, "!"):
			in = append(in, strings.TrimSuffix(strings.TrimPrefix(line, "!"), "/"))
		}
	}
	if !sawAll {
		t.Fatalf("%s must start by ignoring everything (**)", path)
	}
	for _, need := range []string{"go.mod", "go.sum"} {
		if !slices.Contains(in, need) {
			t.Errorf("%s leaves out %s", path, need)
		}
	}
	return in
}
