package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion is the version this binary reports: the one a release
// stamped with -ldflags "-X main.version=...", else the main module's
// version from the build information (a tagged module, or "(devel)" for
// a build in a checkout), followed by the commit the build came from.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return formatVersion(version, bi)
	}
	return formatVersion(version, nil)
}

// formatVersion formats stamped (main.version) and the build information
// bi (nil when there is none) as "VERSION (REVISION, TIME[, modified])":
// the revision is the VCS commit's first 12 characters, the time its
// commit time, and "modified" says the working tree had uncommitted
// changes.
func formatVersion(stamped string, bi *debug.BuildInfo) string {
	v := stamped
	if (v == "" || v == "dev") && bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	if bi == nil {
		return v
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	parts := []string{rev}
	if when != "" {
		parts = append(parts, when)
	}
	if modified {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
