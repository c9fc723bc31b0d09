//go:build linux

package snapshot

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

const mkdirChildEnv = "SECKILL_SNAPSHOT_MKDIR_CHILD"

// The first snapshot of a SKU creates its snapshots folder, and the log
// is then truncated up to that snapshot: the folder's entry in the SKU's
// folder must be durable before Write returns, or a crash can lose the
// folder, the snapshot in it, and with the truncated log the records it
// covered. A child process (this test binary again) writes one snapshot
// into a folder to be made; strace watches for the fsync of its parent
// after the mkdir.
func TestWriteMakesANewFolderDurable(t *testing.T) {
	if dir := os.Getenv(mkdirChildEnv); dir != "" {
		m := sku.New()
		m.Define(1_000, testDef, nil)
		if _, err := Write(filepath.Join(dir, "snapshots"), m.Freeze(), 1, Options{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is needed to watch the fsyncs (apt-get install strace; .ci/run installs it)")
	}
	dir := filepath.Join(t.TempDir(), "sku")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace.txt")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "signal=none", "-e", "trace=mkdir,mkdirat,fsync",
		"-o", trace, os.Args[0], "-test.run=^TestWriteMakesANewFolderDurable$", "-test.count=1")
	cmd.Env = append(os.Environ(), mkdirChildEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the traced child failed: %v\n%s", err, out)
	}
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	made, parentSynced := false, false
	mkdir := regexp.MustCompile(`mkdir(at)?\(.*"` + regexp.QuoteMeta(filepath.Join(dir, "snapshots")) + `".*= 0$`)
	fsyncParent := regexp.MustCompile(`fsync\(\d+<` + regexp.QuoteMeta(dir) + `>\)\s+= 0$`)
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		switch {
		case mkdir.MatchString(line):
			made = true
		case made && fsyncParent.MatchString(line):
			parentSynced = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !made {
		t.Fatalf("the trace shows no mkdir of %s/snapshots:\n%s", dir, strings.Join(lines, "\n"))
	}
	if !parentSynced {
		t.Fatalf("Write created %s/snapshots and returned without an fsync of %s:\n%s", dir, dir, strings.Join(lines, "\n"))
	}
}
