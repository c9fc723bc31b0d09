//go:build unix

package httpapi_test

import "syscall"

// processCPU returns the CPU time the process has used so far, user and
// system, in ns; 0 where it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
