// Package testbin builds the project's commands for tests that run them
// as processes of their own (kill -9 and restart, a replica set, a
// cluster, the docs' shell blocks). A link costs seconds of CPU (more
// with -race), so in a package whose TestMain runs its tests through
// Main each set of packages and flags is built once for all of its
// tests; elsewhere each call builds into a temp dir of the test.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Main runs the package's tests (call it from TestMain with its
// *testing.M, or with what wraps it) with one directory for what Build and
// Dir make, shared by all of them; it removes that directory after and
// exits with the tests' status.
func Main(m interface{ Run() int }) {
	dir, err := os.MkdirTemp("", "seckill-testbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		os.Exit(2)
	}
	shared.mu.Lock()
	shared.dir = dir
	shared.mu.Unlock()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Build compiles the main package pkg (an import path, or a path relative
// to the test's package such as ./testdata/x) with the go build flags
// flags and returns the binary's path (named as go build names it: the
// last element of pkg).
func Build(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	return filepath.Join(Dir(t, flags, pkg), path.Base(pkg))
}

// Dir compiles the main packages pkgs (import paths, or patterns such as
// github.com/seckill/seckill/cmd/...) with the go build flags flags into
// one directory and returns it: what a script that runs several commands
// from one folder needs.
func Dir(t testing.TB, flags []string, pkgs ...string) string {
	t.Helper()
	shared.mu.Lock()
	if shared.dir == "" {
		shared.mu.Unlock()
		dir := t.TempDir()
		if err := build(dir, flags, pkgs); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	key := strings.Join(flags, "\x00") + "\x01" + strings.Join(pkgs, "\x00")
	b := shared.builds[key]
	if b == nil {
		b = &built{dir: filepath.Join(shared.dir, strconv.Itoa(len(shared.builds)))}
		shared.builds[key] = b
	}
	shared.mu.Unlock()
	b.once.Do(func() { b.err = build(b.dir, flags, pkgs) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}

// Race returns the flag that builds a binary with the race detector when
// this test binary runs with it (its packages are then already compiled
// so, and races in the child are caught too), and none otherwise.
func Race() []string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return []string{"-race"}
			}
		}
	}
	return nil
}

// shared holds what Build and Dir made under Main, by flags and packages.
var shared = struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*built
}{builds: map[string]*built{}}

type built struct {
	once sync.Once
	dir  string
	err  error
}

// build runs go build of pkgs with flags into dir.
func build(dir string, flags, pkgs []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := append(append([]string{"build", "-o", dir + string(filepath.Separator)}, flags...), pkgs...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
