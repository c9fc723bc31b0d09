package version_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Makefile stamps, into a build the toolchain records no commit for
// (-buildvcs=false, as in a git worktree), the commit, its time and the
// dirty flag as git says them, and every binary it builds carries the
// stamps: --version of such a build reads what a build with VCS stamps
// reads.
func TestMakefileStampsTheCommit(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(makefile), "\n") {
		if strings.Contains(line, "$(GO) build") && !strings.Contains(line, `-ldflags "$(LDFLAGS)"`) &&
			!strings.Contains(line, "internal/etcdtest") {
			t.Errorf("a build without the stamps: %s", strings.TrimSpace(line))
		}
	}

	// The flags as make computes them.
	printer := filepath.Join(t.TempDir(), "print.mk")
	if err := os.WriteFile(printer, []byte("print-ldflags:\n\t@echo '$(LDFLAGS)'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("make", "-s", "--no-print-directory", "-f", "Makefile", "-f", printer, "print-ldflags")
	mk.Dir = root
	flags, err := mk.Output()
	if err != nil {
		t.Fatalf("make print-ldflags: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "seckill-sim")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./cmd/seckill-sim")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	line := strings.TrimSpace(string(out))

	// What git says of the tree, read after the build as make read it
	// (nothing where git cannot read the checkout: no stamps then).
	git := func(args ...string) (string, bool) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "TZ=UTC")
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	want := "seckill-sim (devel) commit unknown built "
	if rev, ok := git("rev-parse", "HEAD"); ok {
		at, _ := git("show", "-s", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "HEAD")
		want = "seckill-sim (devel) commit " + rev[:12]
		if status, _ := git("status", "--porcelain"); status != "" {
			want += " (modified)"
		}
		want += " of " + at + " built "
	}
	if !strings.HasPrefix(line, want) {
		t.Fatalf("--version of a -buildvcs=false build by the Makefile's flags:\ngot  %q\nwant %q...", line, want)
	}
	if !regexp.MustCompile(` built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ go1\.`).MatchString(line) {
		t.Fatalf("--version without the build time: %q", line)
	}
}
