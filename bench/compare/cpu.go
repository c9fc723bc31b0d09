package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc/<pid>/stat
// times; it is 100 on every architecture Go supports on Linux.
const clockTicksPerSecond = 100

// procTimes is one process's line of /proc/<pid>/stat, the fields we use.
type procTimes struct {
	pid, ppid int
	// ticks = utime + stime + cutime + cstime: the process's own CPU and
	// that of its children it has waited for.
	ticks int64
}

// readProcStat parses /proc/<pid>/stat.
func readProcStat(pid int) (procTimes, error) {
	body, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procTimes{}, err
	}
	return parseProcStat(body)
}

// parseProcStat reads pid, ppid and the four time fields. The command name
// (field 2) is in parentheses and may hold spaces, so fields are counted
// after its closing parenthesis.
func parseProcStat(body []byte) (procTimes, error) {
	open := bytes.IndexByte(body, '(')
	closing := bytes.LastIndexByte(body, ')')
	if open < 0 || closing < open {
		return procTimes{}, fmt.Errorf("stat: no command name")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(body[:open])))
	if err != nil {
		return procTimes{}, fmt.Errorf("stat: pid: %w", err)
	}
	fields := bytes.Fields(body[closing+1:])
	// fields[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(fields) < 15 {
		return procTimes{}, fmt.Errorf("stat: %d fields", len(fields)+2)
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return procTimes{}, fmt.Errorf("stat: ppid: %w", err)
	}
	var ticks int64
	for _, index := range []int{11, 12, 13, 14} {
		value, err := strconv.ParseInt(string(fields[index]), 10, 64)
		if err != nil {
			return procTimes{}, fmt.Errorf("stat: time field: %w", err)
		}
		ticks += value
	}
	return procTimes{pid: pid, ppid: ppid, ticks: ticks}, nil
}

// treeCPU returns the CPU time of a process and all its live descendants
// (PostgreSQL's backends are children of the postmaster), plus the children
// they have reaped.
func treeCPU(root int) (time.Duration, error) {
	rootTimes, err := readProcStat(root)
	if err != nil {
		return 0, err
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := make(map[int][]procTimes)
	for _, path := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || pid == root {
			continue
		}
		times, err := readProcStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		children[times.ppid] = append(children[times.ppid], times)
	}
	total := rootTimes.ticks
	queue := []int{root}
	for steps := 0; len(queue) > 0 && steps < len(paths)+1; steps++ {
		parent := queue[0]
		queue = queue[1:]
		for _, child := range children[parent] {
			total += child.ticks
			queue = append(queue, child.pid)
		}
	}
	return time.Duration(total) * time.Second / clockTicksPerSecond, nil
}

// selfCPU returns this process's user + system CPU time (getrusage).
func selfCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
