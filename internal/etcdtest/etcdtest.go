// Package etcdtest runs a real etcd (v3.7.3, built from the etcd server Go
// module by the nested module etcdserver/) as a separate process on
// 127.0.0.1 with a temporary data dir, for the ledger and cell tests and
// for make cluster. Being a process of its own, it can be paused (SIGSTOP)
// and killed like a production member. Proxy (proxy.go) cuts one client's
// link to it.
//
// The binary is built once per content of the nested module and kept in
// the user cache directory ($XDG_CACHE_HOME or ~/.cache on Linux) as
// seckill/etcd-<version>-<hash>, shared by every test run and test binary
// (see Build); nothing is written to /tmp per run. Remove that directory
// to reclaim the space (about 33 MB per module version).
package etcdtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/proctest"
)

// Version is the etcd server version the nested module pins.
const Version = "3.7.3"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// moduleDir is the nested module's directory, next to this file.
func moduleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "etcdserver")
}

// moduleFiles are the nested module's inputs that decide the binary.
var moduleFiles = []string{"go.mod", "go.sum", "main.go"}

// cachePath returns where the binary built from the module in dir lives
// under cacheRoot: seckill/etcd-<Version>-<first 16 hex digits of the
// SHA-256 of go.mod, go.sum and main.go>. A change to any of them names a
// new file; the old one stays until the cache is cleaned.
func cachePath(cacheRoot, dir string) (string, error) {
	h := sha256.New()
	for _, name := range moduleFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("etcdtest: hash module: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	return filepath.Join(cacheRoot, "seckill", "etcd-"+Version+"-"+sum), nil
}

// Build returns the path of the etcd server binary, building it into the
// user cache directory (os.UserCacheDir, e.g. ~/.cache; os.TempDir if
// there is none) when no binary for this module content is there yet (see
// cachePath). Later runs and other test binaries reuse it, so nothing is
// left behind per run. Two processes building at once each write a temp
// file in the cache directory and rename it into place; the rename is
// atomic, so a reader sees a whole binary or none. The first build of the
// server's dependency graph takes minutes on a small machine.
func Build() (string, error) {
	buildOnce.Do(func() {
		root, err := os.UserCacheDir()
		if err != nil {
			root = os.TempDir()
		}
		buildPath, buildErr = buildInto(root, moduleDir())
	})
	return buildPath, buildErr
}

// buildInto builds the module in dir to its cachePath under cacheRoot
// unless the file is already there, and returns that path.
func buildInto(cacheRoot, dir string) (string, error) {
	path, err := cachePath(cacheRoot, dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("etcdtest: cache dir: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("etcdtest: cache dir: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name()) // a no-op once renamed
	cmd := exec.Command("go", "build", "-o", tmp.Name(), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("etcdtest: build etcd %s: %v\n%s", Version, err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("etcdtest: install etcd binary: %w", err)
	}
	return path, nil
}

// Server is one running etcd member.
type Server struct {
	// Endpoint is its client address, host:port.
	Endpoint string
	dataDir  string
	peer     string
	bin      string
	noFsync  bool
	ownGroup bool
	cmd      *exec.Cmd
	done     chan struct{}
}

// FreePort returns a loopback host:port nobody listened on a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start builds (once) and starts an etcd member with data in a temporary
// directory and waits until it serves. It is killed when t ends. It never
// fsyncs: what a test holds etcd to is its answers, and a kill -9 loses
// nothing the page cache holds, while the fsyncs of a machine loaded by
// other work (every seckilld of a parallel test fsyncs each commit) can
// take seconds and end the leases of a test's replicas, a failover that
// test did not ask for. StartIn's member fsyncs, as production's does.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := startIn(filepath.Join(t.TempDir(), "etcd"), true, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// StartIn starts a member with its data in dataDir and its log (stderr)
// in dataDir + ".log" (see Start), for a command (make ha-demo, a
// benchmark) that stops it: the caller must Kill or Terminate it. The
// member runs in a process group of its own: a Ctrl-C in a terminal
// signals the command's group, not the member, which the command then
// stops after the processes that need it (a replica releasing its leader
// key), as cells/cluster.sh does for make cluster.
func StartIn(dataDir string) (*Server, error) { return startIn(dataDir, false, true) }

// startIn is StartIn, with noFsync a member that never fsyncs (Start) and
// ownGroup one in a process group of its own (StartIn; Start's stays in
// the test's group, so a Ctrl-C of go test ends it with the test).
func startIn(dataDir string, noFsync, ownGroup bool) (*Server, error) {
	bin, err := Build()
	if err != nil {
		return nil, err
	}
	// FreePort's ports are free when it returns, not when etcd binds them:
	// another process of a parallel test may take one in between, and etcd
	// then exits at once. A first start takes other ports then.
	for attempt := 1; ; attempt++ {
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Endpoint: client, dataDir: dataDir, peer: peer, bin: bin, noFsync: noFsync, ownGroup: ownGroup}
		err = s.start()
		if err == nil || attempt == startAttempts || !strings.Contains(err.Error(), "address already in use") {
			return s, err
		}
		if err := os.RemoveAll(dataDir); err != nil { // whatever the failed start made: a first start begins empty
			return nil, err
		}
	}
}

// freePort is FreePort, replaced by a test that hands out a taken port.
var freePort = FreePort

// startAttempts bounds the first starts of a member whose ports were
// taken before it bound them.
const startAttempts = 5

func (s *Server) start() error {
	args := []string{"--data-dir", s.dataDir, "--client-addr", s.Endpoint, "--peer-addr", s.peer}
	if s.noFsync {
		args = append(args, "--unsafe-no-fsync")
	}
	cmd := exec.Command(s.bin, args...)
	if s.ownGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(s.dataDir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "READY ") {
				ready <- nil
			}
		}
		ready <- fmt.Errorf("etcdtest: etcd exited before it was ready; its log ends: %s", logTail(s.dataDir+".log"))
	}()
	go func() { cmd.Wait(); close(s.done) }()
	select {
	case err := <-ready:
		if err != nil {
			s.Kill()
		}
		return err
	case <-time.After(90 * time.Second):
		s.Kill()
		return errors.New("etcdtest: etcd not ready after 90 s")
	}
}

// Restart starts the member again on the same data dir and address after
// Kill.
func (s *Server) Restart() error { return s.start() }

// Pause stops the process (SIGSTOP) and returns once every thread of it is
// stopped: its sockets stay open, nothing answers.
func (s *Server) Pause() error { return proctest.Pause(s.cmd.Process) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() error { return proctest.Resume(s.cmd.Process) }

// Kill kills the process (SIGKILL, after SIGCONT in case it is paused) and
// waits for it. Killing a dead member does nothing.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Kill()
	<-s.done
}

// Terminate stops the member cleanly (SIGTERM) and waits up to 10 s.
func (s *Server) Terminate() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-s.done:
	case <-ctx.Done():
		s.Kill()
	}
}

// Pid returns the process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// logTail is the last lines of the member's log, for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}
