// Package pgserver starts a private PostgreSQL cluster: initdb in a new
// temporary directory, postgres on a free 127.0.0.1 port, trust
// authentication for its one superuser, removed on Close. The baselines
// (bench/compare), the order service's tests and make bench-orders use it;
// it needs Debian's postgresql package (initdb and postgres), which CI
// installs. As root it runs the server as the "postgres" (or "nobody")
// user, since PostgreSQL refuses root.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// User is the cluster's superuser (trust authentication on loopback).
const User = "seckill"

// ErrUnavailable: PostgreSQL cannot run here (no binaries, no user to run
// it as).
var ErrUnavailable = errors.New("pgserver: PostgreSQL is not available")

// Options configures Start.
type Options struct {
	// BinDir holds initdb and postgres (default: the newest
	// /usr/lib/postgresql/*/bin, else the directory of postgres on PATH).
	BinDir string
	// WorkDir holds the cluster's temporary directory (default
	// os.TempDir(); it must be traversable by the server's user).
	WorkDir string
	// Settings are postgres -c settings over the defaults
	// (synchronous_commit=on, fsync=on, max_connections=100,
	// log_min_messages=warning).
	Settings map[string]string
}

// Server is a running cluster.
type Server struct {
	dir     string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Start creates and starts a cluster, and returns once it accepts
// connections (at most a minute).
func Start(ctx context.Context, o Options) (*Server, error) {
	binDir, err := findBinDir(o.BinDir)
	if err != nil {
		return nil, err
	}
	credential, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.WorkDir, "seckill-postgres-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, exited: make(chan struct{})}
	if err := s.start(ctx, binDir, credential, o.Settings); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, binDir string, credential *syscall.Credential, settings map[string]string) error {
	if credential != nil {
		if err := os.Chown(s.dir, int(credential.Uid), int(credential.Gid)); err != nil {
			return err
		}
	}
	dataDir := filepath.Join(s.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", dataDir, "-U", User, "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: credential}
	initdb.Dir = s.dir
	if out, err := initdb.CombinedOutput(); err != nil {
		if errors.Is(err, os.ErrPermission) && credential != nil {
			return fmt.Errorf("pgserver: initdb runs as uid %d and cannot reach %s: choose a work dir every user can traverse, such as /tmp: %w", credential.Uid, s.dir, err)
		}
		return fmt.Errorf("pgserver: initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	all := map[string]string{"listen_addresses": "127.0.0.1", "port": strconv.Itoa(port), "unix_socket_directories": s.dir,
		"synchronous_commit": "on", "fsync": "on", "max_connections": "100", "log_min_messages": "warning"}
	for k, v := range settings {
		all[k] = v
	}
	args := []string{"-D", dataDir}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		args = append(args, "-c", k+"="+all[k])
	}
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if credential != nil {
		_ = os.Chown(s.logPath(), int(credential.Uid), int(credential.Gid))
	}
	s.cmd = exec.Command(filepath.Join(binDir, "postgres"), args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Its own process group (a Ctrl-C of the caller reaches it only through
	// Close), and SIGKILL if the caller dies.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: credential}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	return s.waitReady(ctx)
}

// waitReady connects until the server answers, it exits or a minute passes.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	var last error
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		select {
		case <-s.exited:
			return fmt.Errorf("pgserver: postgres exited during start-up (%v); log:\n%s", s.waitErr, s.LogTail())
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(pctx, s.URL("postgres"))
		if err == nil {
			err = conn.Close(pctx)
		}
		cancel()
		if last = err; err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(min(50*time.Millisecond*time.Duration(attempt), 500*time.Millisecond))
	}
	return fmt.Errorf("pgserver: not ready within a minute: %v; log:\n%s", last, s.LogTail())
}

// URL is the connection string of database on the server (it exists:
// "postgres", or one made with CREATE DATABASE).
func (s *Server) URL(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, s.port, database)
}

// PID is the postmaster's process id (its backends are its children).
func (s *Server) PID() int { return s.cmd.Process.Pid }

func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// LogTail returns the end of the server's log, for error messages.
func (s *Server) LogTail() string {
	b, _ := os.ReadFile(s.logPath())
	return strings.TrimSpace(string(b[max(0, len(b)-1500):]))
}

// Close stops the server (SIGINT: the fast shutdown; SIGKILL after 30 s)
// and removes its directory.
func (s *Server) Close() error {
	var err error
	if s.cmd != nil && s.cmd.Process != nil {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
				err = errors.New("pgserver: postgres did not stop within 30 s of SIGINT; killed")
			}
		}
	}
	_ = os.RemoveAll(s.dir)
	return err
}

// ForTest starts a cluster for t (Settings as Start's) and stops it when
// t ends; it fails t when PostgreSQL cannot run (CI installs it).
func ForTest(t testing.TB, settings map[string]string) *Server {
	t.Helper()
	s, err := Start(context.Background(), Options{Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// findBinDir returns a directory holding initdb and postgres.
func findBinDir(configured string) (string, error) {
	var candidates []string
	if configured != "" {
		candidates = append(candidates, configured)
	} else {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Slice(dirs, func(i, j int) bool { return majorVersion(dirs[i]) > majorVersion(dirs[j]) })
		candidates = append(candidates, dirs...)
		if found, err := exec.LookPath("postgres"); err == nil {
			if resolved, err := filepath.EvalSymlinks(found); err == nil {
				candidates = append(candidates, filepath.Dir(resolved))
			}
		}
	}
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "postgres")) && isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: no server binaries (postgres, initdb) in %v: install Debian's postgresql", ErrUnavailable, candidates)
}

// majorVersion reads the major version from /usr/lib/postgresql/<v>/bin.
func majorVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// serverCredential returns the user to run PostgreSQL as: initdb and
// postgres refuse root, so root runs them as "postgres" (or "nobody").
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		account, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(account.Uid)
		gid, err2 := strconv.Atoi(account.Gid)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, fmt.Errorf("%w: running as root and no 'postgres' or 'nobody' user to run it as", ErrUnavailable)
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
