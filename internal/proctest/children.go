package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Child is a process as /proc/PID/stat shows it: its command and its
// process group.
type Child struct {
	Comm string
	Pgrp int
}

// Children returns the processes whose parent is pid, by their pid, as
// /proc shows them now: what a test that stops a tree of processes checks
// the groups of, and then that none runs any more.
func Children(pid int) (map[int]Child, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	children := map[int]Child{}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended since the glob
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 3 {
			continue
		}
		child, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		if ppid == pid {
			children[child] = Child{Comm: s[open+1 : end], Pgrp: pgrp}
		}
	}
	return children, nil
}
