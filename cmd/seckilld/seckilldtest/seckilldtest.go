// Package seckilldtest builds and runs the real seckilld binary for tests
// that need a server process of their own: kill -9 and restart, SIGTERM
// with requests in flight. The child listens on a free loopback port.
package seckilldtest

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
)

// Build compiles ./cmd/seckilld and returns its path; with race it is
// built with -race (pass whether the calling test binary runs with it:
// its packages are then already compiled, and races in the child are
// caught too). In a package whose TestMain runs its tests through Main,
// the binary is built once and shared by every test of the package (a
// link of the race-enabled binary costs seconds of CPU, paid once instead
// of once per test); otherwise each call builds it into a temp dir of t.
func Build(t testing.TB, race bool) string {
	t.Helper()
	if shared.dir == "" {
		bin := filepath.Join(t.TempDir(), "seckilld")
		if err := build(bin, race); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	b := &shared.builds[0]
	if race {
		b = &shared.builds[1]
	}
	b.once.Do(func() {
		name := "seckilld"
		if race {
			name = "seckilld-race"
		}
		b.path = filepath.Join(shared.dir, name)
		b.err = build(b.path, race)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func build(bin string, race bool) error {
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "github.com/seckill/seckill/cmd/seckilld")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build seckilld: %v\n%s", err, out)
	}
	return nil
}

// shared holds the binaries Build made for the tests Main runs: one
// without and one with -race.
var shared struct {
	dir    string
	builds [2]struct {
		once sync.Once
		path string
		err  error
	}
}

// Main runs the package's tests (call it from TestMain with its
// *testing.M, or with what wraps it, such as orderstest.WithPostgres) with
// the seckilld binary Build makes shared by all of them, removes that
// binary after, and exits with the tests' status.
func Main(m interface{ Run() int }) {
	dir, err := os.MkdirTemp("", "seckilldtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "seckilldtest:", err)
		os.Exit(2)
	}
	shared.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Daemon is a running seckilld child process.
type Daemon struct {
	Cmd *exec.Cmd
	// Base is its URL, http://127.0.0.1:<port>.
	Base string
	// Replication is a replica's replication address, host:port, as
	// bound (empty for a process that is no replica).
	Replication string
	// Exited receives the result of the process's Wait, once.
	Exited chan error
	stderr lockedbuf.Buffer
}

// Start runs bin on dataDir (with --addr 127.0.0.1:0, --log-level warn and
// args), the environment plus env, and returns once it listens and
// /readyz answers 200 (failing after 2 minutes: a bound for a child that
// never gets there, however loaded the machine). At the end of the test a child still
// running is killed, and its stderr is logged if the test failed.
func Start(t testing.TB, bin, dataDir string, env []string, args ...string) *Daemon {
	t.Helper()
	return start(t, exec.Command, bin, dataDir, env, "/readyz", args...)
}

// StartReplica is Start for a member of a replica set (args carry
// --replica and its flags): it returns once /healthz answers 200, in
// whichever role (a standby's /readyz is 503 NOT_PRIMARY).
func StartReplica(t testing.TB, bin, dataDir string, env []string, args ...string) *Daemon {
	t.Helper()
	return start(t, exec.Command, bin, dataDir, env, "/healthz", args...)
}

// StartReplicaWith is StartReplica with the process made by command (a
// namespace's Command, say, to run it on a network of its own: args then
// carry --addr and --replication-addr on that network, which override
// the loopback default).
func StartReplicaWith(t testing.TB, command func(name string, args ...string) *exec.Cmd, bin, dataDir string, env []string, args ...string) *Daemon {
	t.Helper()
	return start(t, command, bin, dataDir, env, "/healthz", args...)
}

func start(t testing.TB, command func(string, ...string) *exec.Cmd, bin, dataDir string, env []string, ready string, args ...string) *Daemon {
	t.Helper()
	cmd := command(bin, append([]string{"--addr", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	d := &Daemon{Cmd: cmd, Exited: make(chan error, 1)}
	cmd.Stderr = &d.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan [2]string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if a, ok := strings.CutPrefix(lines.Text(), "seckilld listening on "); ok {
				a, more, _ := strings.Cut(a, " ") // a replica says more after its address
				_, repl, _ := strings.Cut(more, "replication on ")
				repl, _, _ = strings.Cut(repl, ",")
				addr <- [2]string{a, repl}
			}
		}
	}()
	go func() { d.Exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-d.Exited
		}
		if t.Failed() {
			t.Logf("seckilld stderr:\n%s", d.Stderr())
		}
	})
	select {
	case a := <-addr:
		d.Base, d.Replication = a[0], a[1]
	case err := <-d.Exited:
		t.Fatalf("seckilld exited at start: %v\n%s", err, d.Stderr())
	case <-time.After(2 * time.Minute):
		t.Fatalf("seckilld did not start:\n%s", d.Stderr())
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if resp, err := http.Get(d.Base + ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("seckilld not ready:\n%s", d.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stderr returns what the child printed on stderr so far.
func (d *Daemon) Stderr() string { return d.stderr.String() }
