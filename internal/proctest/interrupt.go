package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Interrupt is a Ctrl-C in a terminal to a command that stops what it
// started in order (make cluster, make ha-demo): it checks that none of
// started, the command's children, is in the process group cmdPid leads
// (else the Ctrl-C would reach it at once, not in the command's order),
// sends SIGINT to that group, and checks that the command exits 130 within
// two minutes, that none of started runs after it, and that no line of
// the *.log files in logDir holds one of badLines (what a child logs when
// what it needs, etcd, stopped before it). exited yields the command's
// Wait; exitCode its exit code once it did; name and out word the failures.
func Interrupt(t testing.TB, name string, cmdPid int, started map[int]Child, exited <-chan error, exitCode func() int,
	out fmt.Stringer, logDir string, badLines ...string) {
	t.Helper()
	for pid, p := range started {
		if p.Pgrp == cmdPid {
			t.Errorf("%s (pid %d) is in %s's process group: a Ctrl-C stops it at once, not in %s's order", p.Comm, pid, name, name)
		}
	}
	if err := syscall.Kill(-cmdPid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if code := exitCode(); code != 130 {
			t.Fatalf("%s after a Ctrl-C: %v (exit %d), want exit 130\n%s", name, err, code, out.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s still ran 2 minutes after a Ctrl-C\n%s", name, out.String())
	}
	for pid, p := range started {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("%s (pid %d) still runs after %s exited", p.Comm, pid, name)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, bad := range badLines {
				if strings.Contains(line, bad) {
					t.Errorf("%s: etcd stopped before it: %s", filepath.Base(l), line)
				}
			}
		}
	}
}
