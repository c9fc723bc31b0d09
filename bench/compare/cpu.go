package compare

import (
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc/<pid>/stat
// times; it is 100 on every architecture Go supports on Linux (procfs
// assumes the same).
const clockTicksPerSecond = 100

// ownTicks is a process's CPU time in clock ticks: its own user and system
// time, and that of its children it has waited for.
func ownTicks(stat procfs.ProcStat) int64 {
	return int64(stat.UTime) + int64(stat.STime) + int64(stat.CUTime) + int64(stat.CSTime)
}

// treeCPU returns the CPU time of a process and all its live descendants
// (PostgreSQL's backends are children of the postmaster), plus the children
// they have reaped. /proc is read with prometheus/procfs.
func treeCPU(root int) (time.Duration, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	rootProc, err := fs.Proc(root)
	if err != nil {
		return 0, err
	}
	rootStat, err := rootProc.Stat()
	if err != nil {
		return 0, err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return 0, err
	}
	children := make(map[int][]procfs.ProcStat)
	for _, proc := range procs {
		if proc.PID == root {
			continue
		}
		stat, err := proc.Stat()
		if err != nil {
			continue // exited meanwhile
		}
		children[stat.PPID] = append(children[stat.PPID], stat)
	}
	total := ownTicks(rootStat)
	// Each process is visited once: a pid has one parent, so the walk
	// takes at most len(procs) steps.
	queue := []int{root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, child := range children[parent] {
			total += ownTicks(child)
			queue = append(queue, child.PID)
		}
		delete(children, parent)
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

// machineBusyCPU returns the CPU time the whole machine has been busy
// (user, nice, system, interrupts, steal: every state but idle and iowait)
// from /proc/stat; false when unreadable.
func machineBusyCPU() (time.Duration, bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	stat, err := fs.Stat()
	if err != nil {
		return 0, false
	}
	c := stat.CPUTotal
	return time.Duration((c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal) * float64(time.Second)), true
}
