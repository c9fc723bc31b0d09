// Package version renders what a seckill binary was built from, for the
// --version flag of every command: the module version, the commit and its
// time, whether the tree had local changes, and the Go version, all read
// from the build information the Go toolchain embeds (runtime/debug).
package version

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// Set by the Makefile's build (-ldflags -X) for builds without VCS stamps
// (a git worktree, GOFLAGS=-buildvcs=false): the commit, its time (RFC
// 3339, UTC), whether the tree had local changes ("true" or "false"), and
// when the binary was built. The build information's own stamps win when
// it has them.
var (
	commit     string
	commitTime string
	modified   string
	buildTime  string
)

// vcs returns the commit, its time and whether the tree had local changes:
// the build information's stamps (vcs.revision, vcs.time, vcs.modified)
// when it recorded a commit, else the Makefile's.
func vcs(settings []debug.BuildSetting) (rev, at string, dirty bool) {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return commit, commitTime, modified == "true"
	}
	return rev, at, dirty
}

// String returns one line describing the binary program (its name), e.g.
// "seckilld (devel) commit 1a2b3c4d5e6f (modified) of 2026-12-01T15:04:05Z go1.24.1":
// the module version, the commit, whether the tree had local changes, the
// commit's time, the build time (when the Makefile set it) and the Go
// version. A commit the build did not record reads "unknown"; the
// toolchain records no build time of its own.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return program + " (no build information)"
	}
	return describe(program, info)
}

// describe renders info (split from String so a test can give its own).
func describe(program string, info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, at, dirty := vcs(info.Settings)
	if rev == "" {
		rev = "unknown"
	} else if len(rev) > 12 {
		rev = rev[:12]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s commit %s", program, version, rev)
	if dirty {
		b.WriteString(" (modified)")
	}
	if at != "" {
		fmt.Fprintf(&b, " of %s", at)
	}
	if buildTime != "" {
		fmt.Fprintf(&b, " built %s", buildTime)
	}
	fmt.Fprintf(&b, " %s", info.GoVersion)
	return b.String()
}

// Commit returns the commit the binary was built from (the build
// information's, else the Makefile's stamp), with " (modified)" when the
// tree had local changes; "unknown" when neither recorded it.
func Commit() string {
	var settings []debug.BuildSetting
	if info, ok := debug.ReadBuildInfo(); ok {
		settings = info.Settings
	}
	rev, _, dirty := vcs(settings)
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += " (modified)"
	}
	return rev
}

// Requested reports whether args ask for the version: a --version or
// -version before any "--".
func Requested(args []string) bool {
	return hasFlag(args, "--version", "-version")
}

// HelpRequested reports whether args ask for help: -h, -help or --help
// before any "--". With Requested, the two flags every seckill command
// answers (on stdout, exit 0) before parsing its own.
func HelpRequested(args []string) bool {
	return hasFlag(args, "-h", "-help", "--help")
}

// hasFlag reports whether one of names is in args before any "--".
func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// Preamble is the start of every binary's main: it answers --version
// (String(program) on stdout; done is true, exit 0) and otherwise says
// where a flag set's usage goes: stdout when --help was asked for (the
// usage is then the answer, exit 0), stderr otherwise (a usage error).
func Preamble(program string, args []string, stdout, stderr io.Writer) (usage io.Writer, done bool) {
	if Requested(args) {
		fmt.Fprintln(stdout, String(program))
		return nil, true
	}
	if HelpRequested(args) {
		return stdout, false
	}
	return stderr, false
}
