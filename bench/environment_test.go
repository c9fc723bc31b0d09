package bench

import (
	"runtime"
	"strings"
	"testing"
)

// The probe describes this machine and counts the CPU time of the run.
func TestEnvironmentProbe(t *testing.T) {
	p := beginEnvironment("--fsync always", 0)
	busy := 0
	for i := range 20_000_000 { // some CPU time of the client's own
		busy += i % 7
	}
	env := p.end()
	if env.Cores != runtime.GOMAXPROCS(0) || env.GoVersion != runtime.Version() || !strings.HasPrefix(env.OS, runtime.GOOS) || env.ServerFlags != "--fsync always" {
		t.Fatalf("environment %+v", env)
	}
	if runtime.GOOS == "linux" && (env.MemoryBytes == 0 || env.MachineCPUS < env.ClientCPUS-0.05) {
		t.Fatalf("environment on Linux %+v (busy %d)", env, busy)
	}
}

// Warnings name a busy machine before the run and others' CPU during it.
func TestEnvironmentWarnings(t *testing.T) {
	idle := Environment{Cores: 2, LoadAverageBefore: [3]float64{0.3}, OtherCPUS: 1}
	if w := idle.warnings(10, true); len(w) != 0 {
		t.Fatalf("idle machine: %q", w)
	}
	busy := Environment{Cores: 2, LoadAverageBefore: [3]float64{4.5}, OtherCPUS: 8}
	w := busy.warnings(10, true)
	if len(w) != 2 || !strings.Contains(w[0], "load average 4.50 on 2 cores") || !strings.Contains(w[1], "8.0 CPU-s during the run, 40% of the machine") {
		t.Fatalf("busy machine: %q", w)
	}
}
