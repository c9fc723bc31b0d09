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
	for _, args := range [][]string{{"-steps", "0"}, {"-campaign", "-admission"}, {"-cells", "-campaign"}, {"-admission", "-cells"}, {"-replicas", "-cells"}} {
		var out, errs bytes.Buffer
		if code := run(args, &out, &errs); code != 2 {
			t.Fatalf("exit %d for %v, want 2", code, args)
		}
	}
}

// A count that would run nothing, or not what it says, is a usage error
// (exit 2) with one line naming the flag, before any history runs.
func TestCountsAtLeastOne(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-workers", "-1"}, "-workers must be at least 1, not -1"},
		{[]string{"-workers", "0"}, "-workers must be at least 1, not 0"},
		{[]string{"-seeds", "0"}, "-seeds must be at least 1, not 0"},
		{[]string{"-first", "0"}, "-first must be at least 1"},
		{[]string{"-first", "18446744073709551615", "-seeds", "2"}, "-first 18446744073709551615 -seeds 2 goes past the last seed"},
		{[]string{"-steps", "-3"}, "-steps must be at least 1, not -3"},
	} {
		var out, errs bytes.Buffer
		if code := run(c.args, &out, &errs); code != 2 || out.Len() != 0 || strings.Count(errs.String(), "\n") != 1 ||
			!strings.HasPrefix(errs.String(), "seckill-sim: "+c.says) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line %q", c.args, code, out.String(), errs.String(), c.says)
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"-first", "18446744073709551615", "-seeds", "1", "-steps", "5", "-workers", "1"}, &out, &errs); code != 0 {
		t.Fatalf("the last seed alone: exit %d: %s%s", code, out.String(), errs.String())
	}
}

// -admission runs the admission histories: buyers throttled while the
// disk is slow.
func TestAdmissionMode(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-admission", "-seeds", "3"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"seeds 3 (from 1)", "failures 0", "phase_slow", "reserve THROTTLED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// -cells runs the cells histories: the real agent over a faulty ledger;
// a failing seed is named with its mode for make sim.
func TestCellsMode(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-cells", "-seeds", "3"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"seeds 3 (from 1)", "failures 0", "agent_turn", "grant OK"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// -replicas runs the replica-set histories: role loops, each primary the
// engine's shell over a replicated wal, each standby's copy applied by the
// stream's code, under network faults, crashes and pauses.
func TestReplicasMode(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-replicas", "-seeds", "20"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errs.String())
	}
	for _, want := range []string{"seeds 20 (from 1)", "failures 0", "promote", "acknowledged"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
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
