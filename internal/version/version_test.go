package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribe(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"},
		{Key: "vcs.time", Value: "2026-12-01T15:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	want := "seckilld v1.2.3 commit 0123456789ab (modified) of 2026-12-01T15:04:05Z go1.99"
	if got := describe("seckilld", info); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	bare := describe("x", &debug.BuildInfo{GoVersion: "go1.99"})
	if bare != "x (devel) commit unknown go1.99" {
		t.Fatalf("without VCS stamps: %q", bare)
	}
	commit, buildTime = "fedcba9876543210", "2026-12-02T00:00:00Z"
	defer func() { commit, commitTime, modified, buildTime = "", "", "", "" }()
	if got := describe("x", &debug.BuildInfo{GoVersion: "go1.99"}); got != "x (devel) commit fedcba987654 built 2026-12-02T00:00:00Z go1.99" {
		t.Fatalf("stamped by the Makefile: %q", got)
	}
	// The Makefile stamps the commit's time and the dirty flag too, as the
	// toolchain would have recorded them.
	commitTime, modified = "2026-12-01T15:04:05Z", "true"
	want = "x (devel) commit fedcba987654 (modified) of 2026-12-01T15:04:05Z built 2026-12-02T00:00:00Z go1.99"
	if got := describe("x", &debug.BuildInfo{GoVersion: "go1.99"}); got != want {
		t.Fatalf("stamped by the Makefile:\ngot  %q\nwant %q", got, want)
	}
	modified = "false"
	if got := describe("x", &debug.BuildInfo{GoVersion: "go1.99"}); strings.Contains(got, "modified") {
		t.Fatalf("a clean tree stamped: %q", got)
	}
	// The build information's stamps win over the Makefile's.
	if got := describe("x", info); !strings.HasPrefix(got, "x v1.2.3 commit 0123456789ab (modified) of 2026-12-01T15:04:05Z") {
		t.Fatalf("both stamped: %q", got)
	}
}

func TestRequested(t *testing.T) {
	for args, want := range map[string]bool{"--version": true, "-version": true, "verify --version": true, "-- --version": false, "verify DIR": false} {
		if got := Requested(strings.Fields(args)); got != want {
			t.Errorf("%q: %v, want %v", args, got, want)
		}
	}
	for args, want := range map[string]bool{"-h": true, "verify --help": true, "-help": true, "-- -h": false, "verify DIR": false} {
		if got := HelpRequested(strings.Fields(args)); got != want {
			t.Errorf("help %q: %v, want %v", args, got, want)
		}
	}
}

func TestPreamble(t *testing.T) {
	var out, errOut strings.Builder
	if usage, done := Preamble("prog", []string{"--version"}, &out, &errOut); !done || usage != nil ||
		!strings.HasPrefix(out.String(), "prog ") {
		t.Fatalf("--version: done %v, usage %v, stdout %q", done, usage, out.String())
	}
	if usage, done := Preamble("prog", []string{"-h"}, &out, &errOut); done || usage != &out {
		t.Fatalf("-h: done %v, usage is stdout %v", done, usage == &out)
	}
	if usage, done := Preamble("prog", []string{"--bogus"}, &out, &errOut); done || usage != &errOut {
		t.Fatalf("a usage error: done %v, usage is stderr %v", done, usage == &errOut)
	}
}
