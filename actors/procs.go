package actors

import (
	"os"
	"runtime"
)

// TuneProcs sets GOMAXPROCS as a process hosting the engine should: one P
// more than cores, unless the GOMAXPROCS environment variable decides.
// Each SKU's group-commit flusher spends most of its time blocked in fsync,
// and the runtime hands a P held by a blocking syscall to other goroutines
// only once sysmon notices. Measured on 2 cores: ~370 k -> ~480 k durable
// reservations/s (BenchmarkReserveDurable, callers=4096). It returns the
// previous setting, for runtime.GOMAXPROCS to restore.
func TuneProcs() (previous int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	return runtime.GOMAXPROCS(runtime.NumCPU() + 1)
}
