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
	dir := filepath.Join(t.TempDir(), "sku")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	lines := traceWrite(t, dir)
	made, parentSynced := false, false
	mkdir := regexp.MustCompile(`mkdir(at)?\(.*"` + regexp.QuoteMeta(filepath.Join(dir, "snapshots")) + `".*= 0$`)
	fsyncParent := regexp.MustCompile(`fsync\(\d+<` + regexp.QuoteMeta(dir) + `>\)\s+= 0$`)
	for _, line := range lines {
		switch {
		case mkdir.MatchString(line):
			made = true
		case made && fsyncParent.MatchString(line):
			parentSynced = true
		}
	}
	if !made {
		t.Fatalf("the trace shows no mkdir of %s/snapshots:\n%s", dir, strings.Join(lines, "\n"))
	}
	if !parentSynced {
		t.Fatalf("Write created %s/snapshots and returned without an fsync of %s:\n%s", dir, dir, strings.Join(lines, "\n"))
	}
}

// A snapshot file is renamed into place only once its bytes are durable,
// and the rename is made durable before Write returns (the log is then
// truncated up to it): the temp file is fsynced before the rename, and
// the folder after it. Without the first, a crash can leave a whole-named
// file whose bytes the disk never got; without the second, the rename
// itself can be lost with the log already cut.
func TestWriteSyncsTheFileBeforeItsRenameAndTheFolderAfter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sku")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	lines := traceWrite(t, dir)
	snaps := regexp.QuoteMeta(filepath.Join(dir, "snapshots"))
	fsyncTemp := regexp.MustCompile(`fsync\(\d+<` + snaps + `/` + regexp.QuoteMeta(Name(1)) + `\.[^/>]*\.tmp>\)\s+= 0$`)
	rename := regexp.MustCompile(`rename(at2?)?\(.*\.tmp".*"` + snaps + `/` + regexp.QuoteMeta(Name(1)) + `".*= 0$`)
	fsyncFolder := regexp.MustCompile(`fsync\(\d+<` + snaps + `>\)\s+= 0$`)
	tempSynced, renamed, folderSynced := false, false, false
	for _, line := range lines {
		switch {
		case !renamed && fsyncTemp.MatchString(line):
			tempSynced = true
		case tempSynced && rename.MatchString(line):
			renamed = true
		case renamed && fsyncFolder.MatchString(line):
			folderSynced = true
		}
	}
	if !folderSynced {
		t.Fatalf("Write's trace lacks fsync of the temp file (%v), then its rename into place (%v), then fsync of the folder (%v):\n%s",
			tempSynced, renamed, folderSynced, strings.Join(lines, "\n"))
	}
}

// traceWrite runs a child process (this test binary again, as
// TestWriteMakesANewFolderDurable's child) that writes one snapshot at
// index 1 into dir/snapshots, under strace, and returns the trace of its
// mkdirs, renames and fsyncs, with the paths of their file descriptors.
func traceWrite(t *testing.T, dir string) []string {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is needed to watch the fsyncs (apt-get install strace; .ci/run installs it)")
	}
	trace := filepath.Join(t.TempDir(), "trace.txt")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "signal=none", "-e", "trace=mkdir,mkdirat,fsync,rename,renameat,renameat2",
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
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
