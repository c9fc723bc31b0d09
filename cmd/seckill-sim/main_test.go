package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunPrintsTotals(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-seeds", "4", "-steps", "50"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"seeds 4 (from 1), steps 200, failures 0", "faults and events: ", "replies: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestReplayOneSeed(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-seed", "9", "-steps", "30", "-trace"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "step 29: ") || !strings.Contains(out.String(), "every check passed") {
		t.Errorf("replay output:\n%s", out.String())
	}
}

func TestUsageError(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-steps", "0"}, &out, &errs); code != 2 {
		t.Fatalf("exit %d for -steps 0, want 2", code)
	}
}

// --help prints the flags on stdout and --version the build's version
// line, both with exit 0.
func TestHelpAndVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-seeds") {
		t.Fatalf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"--version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "seckill-sim ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: exit %d, %q", code, out.String())
	}
}
