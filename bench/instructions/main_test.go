package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// make bench-instructions, tiny, so that it cannot rot: a batch of the
// engine under callgrind (20 requests: 2 batches of 64 items), one
// round, and a table of its row of instructions per item. The code of
// every path runs in make test's tiny run of httpapi's
// BenchmarkInstructions; this runs the tool around it, whose steps are
// the same for each path (a process under callgrind, its loop dump, its
// benchmark line with the items per iteration), so one path stands for
// the six at a sixth of their callgrind time.
func TestInstructionsTiny(t *testing.T) {
	var out, progress bytes.Buffer
	if code := run([]string{"-rounds", "1", "-requests", "20", "-paths", "batch-item", "-pkg", "../../httpapi/"}, &out, &progress); code != 0 {
		t.Fatalf("exit %d\n%s", code, progress.String())
	}
	t.Logf("\n%s", out.String())
	rows := 0
	for _, line := range strings.Split(out.String(), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 9 || strings.TrimSpace(cells[1]) == "path" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		rows++
		if count := strings.TrimSpace(cells[3]); count == "" || count == "0" {
			t.Errorf("%s: no instructions counted (%q)", cells[1], count)
		}
	}
	if rows != 1 {
		t.Errorf("%d rows, want 1:\n%s", rows, out.String())
	}
	// The runtime's share of a count moves with the machine's load: the
	// table says what the load was.
	if !regexp.MustCompile(`load average \d+\.\d before, \d+\.\d after`).MatchString(out.String()) {
		t.Errorf("the table's header does not give the load average:\n%s", out.String())
	}
}

// A dump's "summary:" counts from the dump before it (the next round's
// set-up included); "totals:" is what the markers bound.
func TestParseTotalsTakesTotals(t *testing.T) {
	dump := "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 66807238\nfn=(1) main\n0 40783835\ntotals: 40783835\n"
	got, err := parseTotals(strings.NewReader(dump))
	if err != nil || got != 40783835 {
		t.Fatalf("parseTotals = %d, %v; want 40783835", got, err)
	}
	if _, err := parseTotals(strings.NewReader("events: Dr Ir\ntotals: 1 2\n")); err == nil {
		t.Fatal("a dump whose first event is not Ir was read")
	}
	if _, err := parseTotals(strings.NewReader("events: Ir\nsummary: 5\n")); err == nil {
		t.Fatal("a dump without totals was read")
	}
}

func TestParseBenchLine(t *testing.T) {
	out := []byte("goos: linux\nBenchmarkInstructions/batch-item \t       2\t  2764896 ns/op\t    512440 cpu-ns/op\t        64.00 items/op\t  245210 B/op\t     618 allocs/op\nPASS\n")
	iters, items, allocs, err := parseBenchLine(out, "batch-item")
	if err != nil || iters != 2 || items != 64 || allocs != 618 {
		t.Fatalf("parseBenchLine = %d, %d, %d, %v; want 2, 64, 618", iters, items, allocs, err)
	}
	if _, _, _, err := parseBenchLine(out, "sold-out"); err == nil {
		t.Fatal("found a line for a path that did not run")
	}
}

func TestChoosePaths(t *testing.T) {
	if got, err := choosePaths(""); err != nil || len(got) != len(paths) {
		t.Fatalf(`choosePaths("") = %v, %v; want all %d`, got, err, len(paths))
	}
	if got, err := choosePaths("batch-item, null-http"); err != nil || len(got) != 2 || paths[got[0]].name != "null-http" || paths[got[1]].name != "batch-item" {
		t.Fatalf("choosePaths = %v, %v; want null-http, batch-item in the table's order", got, err)
	}
	if _, err := choosePaths("hot-reserve,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("an unknown path: %v", err)
	}
}

// -h is answered, not refused: the usage on stdout, exit 0.
func TestHelpIsTheAnswer(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "-rounds") || errOut.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q: want the usage on stdout, exit 0", code, out.String(), errOut.String())
	}
	if code := run([]string{"-no-such-flag"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "-no-such-flag") {
		t.Errorf("a bad flag: exit %d, stderr %q: want exit 2 naming it", code, errOut.String())
	}
}
