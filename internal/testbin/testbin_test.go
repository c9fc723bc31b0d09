package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// run runs bin and returns what it printed.
func run(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Under Main a package and its flags are built once: a second Build
// returns the same file, not rebuilt; other flags are another build.
func TestBuildOncePerPackageAndFlags(t *testing.T) {
	plain := Build(t, "./testdata/hello")
	if got := run(t, plain); got != "hello plain" {
		t.Fatalf("built binary printed %q", got)
	}
	// A rebuild would overwrite this stand-in (its build id is not the
	// package's); an answer of the stand-in shows there was none.
	if err := os.WriteFile(plain, []byte("#!/bin/sh\necho stand-in\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if again := Build(t, "./testdata/hello"); again != plain {
		t.Fatalf("second build at %s, want the first's %s", again, plain)
	}
	if got := run(t, plain); got != "stand-in" {
		t.Fatalf("the second Build rebuilt the binary: it printed %q", got)
	}
	loud := Build(t, "./testdata/hello", "-tags", "loud")
	if loud == plain {
		t.Fatal("a build with other flags shares the first's path")
	}
	if got := run(t, loud); got != "hello loud" {
		t.Fatalf("the -tags loud build printed %q", got)
	}
	if filepath.Base(loud) != "hello" {
		t.Fatalf("binary named %s, want the package's last element", filepath.Base(loud))
	}
}

// Outside Main each call builds into a temp dir of the test.
func TestBuildWithoutMainUsesTheTestsTempDir(t *testing.T) {
	shared.mu.Lock()
	dir := shared.dir
	shared.dir = ""
	shared.mu.Unlock()
	defer func() {
		shared.mu.Lock()
		shared.dir = dir
		shared.mu.Unlock()
	}()
	bin := Build(t, "./testdata/hello")
	if strings.HasPrefix(bin, dir) {
		t.Fatalf("built into Main's directory %s without Main", bin)
	}
	if got := run(t, bin); got != "hello plain" {
		t.Fatalf("built binary printed %q", got)
	}
}

// A package that does not build fails the test with go build's output.
func TestBuildErrorNamesTheCommand(t *testing.T) {
	err := build(t.TempDir(), nil, []string{"./testdata/nonexistent"})
	if err == nil || !strings.Contains(err.Error(), "go build") || !strings.Contains(err.Error(), "nonexistent") {
		t.Fatalf("error %v, want go build's failure naming the package", err)
	}
}

// Race asks for -race exactly when this test binary has the race detector.
func TestRaceFollowsTheTestBinary(t *testing.T) {
	if got := len(Race()) > 0; got != raceBuild {
		t.Fatalf("Race() = %v in a binary built with race %v", Race(), raceBuild)
	}
}
