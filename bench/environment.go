package bench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"github.com/seckill/seckill/internal/version"
)

// Environment says where and how a run was measured, so that a figure can
// be compared with another (docs/benchmarks.md's, a colleague's): the machine, the
// software, the server's flags, and how busy the machine was with other
// work before and during the load. Read from /proc (prometheus/procfs); a
// field that cannot be read is left empty.
type Environment struct {
	// CPUModel is the first CPU's model name (/proc/cpuinfo).
	CPUModel string `json:"cpu_model"`
	// Cores is the number of CPUs the client process may use.
	Cores int `json:"cores"`
	// MemoryBytes is the machine's memory (MemTotal).
	MemoryBytes uint64 `json:"memory_bytes"`
	// OS is GOOS/GOARCH and the kernel's release.
	OS string `json:"os"`
	// GoVersion is the toolchain that built the client.
	GoVersion string `json:"go_version"`
	// Commit is the commit the client was built from.
	Commit string `json:"commit"`
	// ServerFlags are the server's flags as given by --server-flags
	// (bench/run-seed.sh passes seckilld's, with --fsync).
	ServerFlags string `json:"server_flags,omitempty"`
	// LoadAverageBefore and LoadAverageAfter are the 1, 5 and 15 minute
	// load averages just before the load and just after it.
	LoadAverageBefore [3]float64 `json:"load_average_before"`
	LoadAverageAfter  [3]float64 `json:"load_average_after"`
	// CPU seconds used during the load: by the whole machine (busy time,
	// stolen time included), by this client, by the server (when
	// --server-pid names it) and by everything else.
	MachineCPUS float64 `json:"machine_cpu_s"`
	ClientCPUS  float64 `json:"client_cpu_s"`
	ServerCPUS  float64 `json:"server_cpu_s,omitempty"`
	OtherCPUS   float64 `json:"other_cpu_s"`
	// Warnings say when the machine was too busy with other work for the
	// figures to be those of an idle machine.
	Warnings []string `json:"warnings,omitempty"`
}

// Thresholds of the environment's warnings.
const (
	// busyLoadPerCore: a load average above this many runnable tasks per
	// core before the run means other work competed from the start.
	busyLoadPerCore = 0.5
	// busyOtherShare: other processes using more than this share of the
	// machine's CPU time during the load took it from the client and server.
	busyOtherShare = 0.2
)

// environmentProbe measures a run's environment: begin before the load,
// end after it.
type environmentProbe struct {
	fs        procfs.FS
	ok        bool
	env       Environment
	serverPID int
	start     time.Time
	machine   float64 // busy CPU seconds at begin
	client    float64
	server    float64
}

// beginEnvironment describes the machine and samples its load and CPU
// counters before the load.
func beginEnvironment(serverFlags string, serverPID int) *environmentProbe {
	p := &environmentProbe{serverPID: serverPID, start: time.Now()}
	p.env = Environment{Cores: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), Commit: version.Commit(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, ServerFlags: serverFlags}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return p
	}
	p.fs, p.ok = fs, true
	if cpus, err := fs.CPUInfo(); err == nil && len(cpus) > 0 {
		p.env.CPUModel = cpus[0].ModelName
	}
	if mem, err := fs.Meminfo(); err == nil && mem.MemTotal != nil {
		p.env.MemoryBytes = *mem.MemTotal * 1024
	}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		p.env.OS += ", kernel " + strings.TrimSpace(string(release))
	}
	p.env.LoadAverageBefore = p.loadAverage()
	p.machine, p.client, p.server = p.cpu()
	return p
}

// end samples the counters after the load and returns the environment
// with its warnings.
func (p *environmentProbe) end() Environment {
	env := p.env
	if !p.ok {
		return env
	}
	env.LoadAverageAfter = p.loadAverage()
	machine, client, server := p.cpu()
	env.MachineCPUS, env.ClientCPUS = round2(machine-p.machine), round2(client-p.client)
	if p.serverPID > 0 {
		env.ServerCPUS = round2(server - p.server)
	}
	env.OtherCPUS = round2(max(0, env.MachineCPUS-env.ClientCPUS-env.ServerCPUS))
	env.Warnings = env.warnings(time.Since(p.start).Seconds(), p.serverPID > 0)
	return env
}

// warnings says when other work competed with the run, which lasted
// elapsedS seconds: a load average before it above busyLoadPerCore per
// core, or other processes using more than busyOtherShare of the machine
// during it (serverKnown: the server's CPU was told apart).
func (e *Environment) warnings(elapsedS float64, serverKnown bool) []string {
	var out []string
	cores := float64(e.Cores)
	if l := e.LoadAverageBefore[0]; l > busyLoadPerCore*cores {
		out = append(out, fmt.Sprintf("the machine was busy before the run: load average %.2f on %d cores", l, e.Cores))
	}
	if capacity := elapsedS * cores; capacity > 0 && e.OtherCPUS/capacity > busyOtherShare {
		who := "the client (and the server, whose CPU time is counted among the others without --server-pid)"
		if serverKnown {
			who = "the client and the server"
		}
		out = append(out, fmt.Sprintf("other processes used %.1f CPU-s during the run, %.0f%% of the machine, taken from %s: figures are below those of an idle machine",
			e.OtherCPUS, 100*e.OtherCPUS/capacity, who))
	}
	return out
}

// LoadAverage returns the machine's one-minute load average from
// /proc/loadavg, -1 when unreadable: what a figure measured beside other
// work records of it (a result's environment, compare's report, the
// instructions table).
func LoadAverage() float64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return -1
	}
	avg, err := fs.LoadAvg()
	if err != nil {
		return -1
	}
	return avg.Load1
}

// loadAverage reads the 1, 5 and 15 minute load averages.
func (p *environmentProbe) loadAverage() [3]float64 {
	avg, err := p.fs.LoadAvg()
	if err != nil {
		return [3]float64{}
	}
	return [3]float64{avg.Load1, avg.Load5, avg.Load15}
}

// cpu returns the CPU seconds the machine has been busy, and those of this
// process and of the server (0 when unknown).
func (p *environmentProbe) cpu() (machine, client, server float64) {
	if stat, err := p.fs.Stat(); err == nil {
		c := stat.CPUTotal
		machine = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	}
	if self, err := p.fs.Self(); err == nil {
		if st, err := self.Stat(); err == nil {
			client = st.CPUTime()
		}
	}
	if p.serverPID > 0 {
		if proc, err := p.fs.Proc(p.serverPID); err == nil {
			if st, err := proc.Stat(); err == nil {
				server = st.CPUTime()
			}
		}
	}
	return machine, client, server
}

// round2 rounds to hundredths.
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// lines renders the environment for the summary: where, and how busy.
func (e *Environment) lines() []string {
	out := []string{
		fmt.Sprintf("%s, %d cores, %.1f GiB; %s; %s; commit %s", orUnknown(e.CPUModel), e.Cores, float64(e.MemoryBytes)/(1<<30), e.OS, e.GoVersion, e.Commit),
		fmt.Sprintf("load average %.2f before, %.2f after; CPU-s during the load: machine %.1f, client %.1f, server %s, others %.1f",
			e.LoadAverageBefore[0], e.LoadAverageAfter[0], e.MachineCPUS, e.ClientCPUS, serverCPU(e), e.OtherCPUS),
	}
	if e.ServerFlags != "" {
		out = append(out, "server flags: "+e.ServerFlags)
	}
	return out
}

func serverCPU(e *Environment) string {
	if e.ServerCPUS == 0 {
		return "unknown (--server-pid)"
	}
	return fmt.Sprintf("%.1f", e.ServerCPUS)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}
