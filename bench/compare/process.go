package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process bounds.
const (
	// readyTimeout bounds the wait for a server to accept connections.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds a graceful stop before SIGKILL.
	stopTimeout = 30 * time.Second
	// logTail is how much of a server's log an error quotes.
	logTail = 1500
)

// serverProcess is a server this harness started; it is only ever
// signalled by its own pid.
type serverProcess struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startProcess starts argv with its output in logPath. credential, when
// set, runs it as another user (PostgreSQL refuses root). The process gets
// its own process group, so a Ctrl-C of the harness reaches it only through
// the harness's own orderly stop, and SIGKILL if the harness dies.
func startProcess(name, logPath string, credential *syscall.Credential, argv ...string) (*serverProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	if credential != nil {
		_ = os.Chown(logPath, int(credential.Uid), int(credential.Gid))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: credential}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, argv[0], err)
	}
	p := &serverProcess{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// pid returns the process id.
func (p *serverProcess) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *serverProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends sig, waits up to stopTimeout, then kills the process.
func (p *serverProcess) stop(sig syscall.Signal) error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(sig)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s: did not stop within %s after %s; killed", p.name, stopTimeout, sig)
	}
}

// tail returns the end of the process's log, for error messages.
func (p *serverProcess) tail() string {
	return fileTail(p.logPath)
}

// fileTail returns the last logTail bytes of a file.
func fileTail(path string) string {
	body, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(body) > logTail {
		body = body[len(body)-logTail:]
	}
	return strings.TrimSpace(string(body))
}

// waitReady calls probe until it succeeds, the process exits or
// readyTimeout passes.
func (p *serverProcess) waitReady(ctx context.Context, probe func(context.Context) error) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if !p.running() {
			return fmt.Errorf("%s exited during start-up (%v); log:\n%s", p.name, p.waitErr, p.tail())
		}
		probeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = probe(probeCtx)
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(min(50*time.Millisecond*time.Duration(attempt+1), 500*time.Millisecond))
	}
	return fmt.Errorf("%s not ready within %s: %v; log:\n%s", p.name, readyTimeout, last, p.tail())
}

// dialProbe succeeds once addr accepts a TCP connection.
func dialProbe(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var dialer net.Dialer
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// unavailable wraps a reason in ErrUnavailable.
func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))
}

// isUnavailable reports whether err skips a target.
func isUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// serverHome is what every target that runs a server process holds: the
// process and its private directory.
type serverHome struct {
	dir     string
	process *serverProcess
	base    string // http://ADDR, for the servers that speak HTTP
}

// ServerCPU sums the server's CPU time, its children's included, from /proc.
func (h *serverHome) ServerCPU() (time.Duration, bool) {
	if h.process == nil {
		return 0, false
	}
	cpu, err := treeCPU(h.process.pid())
	return cpu, err == nil
}

// shutdown stops the process with sig and removes the directory.
func (h *serverHome) shutdown(sig syscall.Signal) error {
	var err error
	if h.process != nil {
		err = h.process.stop(sig)
	}
	if h.dir != "" {
		_ = os.RemoveAll(h.dir)
	}
	return err
}

// isExecutable reports whether path is an executable file.
func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}
