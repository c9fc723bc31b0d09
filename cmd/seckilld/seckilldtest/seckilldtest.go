// Package seckilldtest builds and runs the real seckilld binary for tests
// that need a server process of their own: kill -9 and restart, SIGTERM
// with requests in flight. The child listens on a free loopback port.
package seckilldtest

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/testbin"
)

// Build compiles ./cmd/seckilld and returns its path; with race it is
// built with -race (pass whether the calling test binary runs with it:
// its packages are then already compiled, and races in the child are
// caught too). In a package whose TestMain runs its tests through
// testbin.Main, the binary is built once and shared by every test of the
// package; otherwise each call builds it into a temp dir of t.
func Build(t testing.TB, race bool) string {
	t.Helper()
	var flags []string
	if race {
		flags = []string{"-race"}
	}
	return testbin.Build(t, "github.com/seckill/seckill/cmd/seckilld", flags...)
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
