package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	vcs := func(mod string, kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mixchat/mixchat", Version: mod}}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"no build information", "dev", nil, "dev"},
		{"release stamp wins", "v1.2.0", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-26T10:00:00Z", "vcs.modified", "false"),
			"v1.2.0 (0123456789ab, 2026-11-26T10:00:00Z)"},
		{"checkout, changed", "dev", vcs("(devel)", "vcs.revision", rev, "vcs.time", "2026-11-26T10:00:00Z", "vcs.modified", "true"),
			"dev (0123456789ab, 2026-11-26T10:00:00Z, modified)"},
		{"module version", "dev", vcs("v0.3.1"), "v0.3.1"},
		{"pseudo-version and revision", "dev", vcs("v0.0.0-20261126100000-0123456789ab", "vcs.revision", rev),
			"v0.0.0-20261126100000-0123456789ab (0123456789ab)"},
		{"go install of a module, no vcs", "", vcs("v0.3.1"), "v0.3.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.stamped, tt.bi); got != tt.want {
				t.Errorf("formatVersion(%q) = %q, want %q", tt.stamped, got, tt.want)
			}
		})
	}
}

// TestVersionFromCheckout builds mixchat in this git checkout and runs
// `mixchat version`: it names the commit checked out.
func TestVersionFromCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree (.git is a file): go build stamps no VCS information there")
	}
	bin := filepath.Join(t.TempDir(), "mixchat")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if rev := strings.TrimSpace(string(head))[:12]; !strings.Contains(string(out), rev) {
		t.Errorf("mixchat version printed %q, want the revision %s", out, rev)
	}
}
