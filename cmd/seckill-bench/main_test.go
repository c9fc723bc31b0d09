package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An unknown command exits 2 and names it, whatever flags follow; a known
// one answers --help and --version (exit 0); a compare that is given an
// argument it does not take names it instead of running the matrix.
func TestCommands(t *testing.T) {
	run1 := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	for _, args := range [][]string{{"nonsense"}, {"nonsense", "--help"}, {"nonsense", "-h"}, {"nonsense", "--version"}} {
		code, out, errOut := run1(args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, `seckill-bench: unknown command "nonsense" (the commands are compare, null-server, orders, report;`) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// docs/operating.md quotes the message up to its list of commands.
	_, _, errOut := run1("nonsense")
	quoted, _, _ := strings.Cut(errOut, ";")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), quoted+"; …)") {
		t.Errorf("docs/operating.md does not quote %q", quoted+"; …)")
	}
	for _, args := range [][]string{{"compare", "nonsense", "--help"}, {"compare", "passes", "nonsense"}, {"null-server", "nonsense", "-h"}} {
		code, _, errOut := run1(args...)
		if code != 2 || !strings.Contains(errOut, `unknown command or argument "nonsense"`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// The usage asked for is the answer: on stdout, as every seckill
	// command gives it (seckill-bench --help | less).
	for _, args := range [][]string{{"--help"}, {"-h", "--scenario", "hot"}, {"compare", "--help"}, {"compare", "passes", "-h"},
		{"orders", "--help"}, {"null-server", "--help"}, {"report", "--help"}} {
		if code, out, errOut := run1(args...); code != 0 || !strings.Contains(out, "usage") && !strings.Contains(out, "Usage") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want the usage on stdout", args, code, out, errOut)
		}
	}
	// The load run's usage lists every command, so that --help finds them
	// all (the README and the Makefile send users to compare passes,
	// orders and report).
	_, usage, _ := run1("--help")
	for name := range commands {
		if !strings.Contains(usage, "seckill-bench "+name+" ") {
			t.Errorf("seckill-bench --help does not list the command %q:\n%s", name, usage)
		}
	}
	_, compareUsage, _ := run1("compare", "--help")
	for what, text := range map[string]string{"seckill-bench --help": usage, "seckill-bench compare --help": compareUsage} {
		if !strings.Contains(text, "seckill-bench compare passes ") {
			t.Errorf("%s does not list compare passes:\n%s", what, text)
		}
	}
	if code, out, _ := run1("compare", "--version"); code != 0 || !strings.HasPrefix(out, "seckill-bench ") {
		t.Errorf("compare --version: exit %d, %q", code, out)
	}
}
