// Package proctest pauses the processes that tests start (etcd, cells,
// replicas) and says when a pause has taken hold, and lists a process's
// children with their process groups.
package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Pause stops process p (SIGSTOP): its sockets stay open, nothing answers.
// It returns once every thread of the process is stopped: the signal is
// delivered asynchronously, and a thread still running could answer one
// more request after kill(2) has returned, which a test that asks "what
// does a paused process answer" would take for the paused answer. It is an
// error if the threads are not all stopped within 10 s.
func Pause(p *os.Process) error {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !AllStopped(p.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: not every thread stopped 10 s after SIGSTOP", p.Pid)
		}
		time.Sleep(time.Millisecond) // polls /proc: there is no event for "stopped"
	}
	return nil
}

// Resume continues a paused process (SIGCONT).
func Resume(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// AllStopped reports whether every thread of process pid is in state T
// (stopped) or t (traced) per /proc; false when it cannot tell.
func AllStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			return false
		}
		// The state follows the command name in parentheses, which may
		// itself hold ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false
		}
	}
	return true
}
