//go:build linux

package wal

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Every fsync the log makes outside the flusher's own (the cut of a torn
// tail, the directory at Open, after a new segment, after a truncation)
// failed for real, at the system call: strace injects EIO into one fsync
// of one path (-P path, when=N) of a child process (this test binary
// again) that runs the scenario. A failed fsync must come back wrapping
// ErrSyncFailed, as the flusher's does: after a failed writeback Linux
// may keep the pages (or directory entries) in its cache marked clean, so
// an owner that reopened the log in place (it does after any other
// failure) would read back what the disk lost, and the next fsync, which
// succeeds, would not tell.

const fsyncFaultChildEnv = "SECKILL_WAL_FSYNC_FAULT_CHILD"

// fsyncFault is one scenario: prepare runs in the parent, run in the
// traced child, which must end in the error it returns.
type fsyncFault struct {
	name string
	// path is the file or folder (under the test's dir) whose when-th
	// fsync fails.
	path    string
	when    int
	context string // a phrase the error must hold: the fsync that failed
	prepare func(t *testing.T, dir string)
	run     func(dir string) error
}

var fsyncFaults = []fsyncFault{
	{
		name: "the cut of a torn tail", path: "wal/" + segmentName(1), when: 1, context: "cut torn tail",
		prepare: func(t *testing.T, dir string) {
			writeLog(t, filepath.Join(dir, "wal"), 3, Options{Logger: quietLogger()})
			f, err := os.OpenFile(filepath.Join(dir, "wal", segmentName(1)), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write([]byte{40, 0x57, 0x53, 1}); err != nil { // an entry cut short
				t.Fatal(err)
			}
		},
		run: func(dir string) error {
			l, err := Open(filepath.Join(dir, "wal"), Options{Logger: quietLogger(), Stepped: true})
			if err == nil {
				l.Close()
			}
			return err
		},
	},
	{
		name: "the parent of a new log's folder", path: ".", when: 1, context: "after creating",
		run: func(dir string) error {
			l, err := Open(filepath.Join(dir, "wal"), Options{Logger: quietLogger(), Stepped: true})
			if err == nil {
				l.Close()
			}
			return err
		},
	},
	{
		name: "the folder at open", path: "wal", when: 1, context: "at open",
		prepare: func(t *testing.T, dir string) {
			writeLog(t, filepath.Join(dir, "wal"), 3, Options{Logger: quietLogger()})
		},
		run: func(dir string) error {
			l, err := Open(filepath.Join(dir, "wal"), Options{Logger: quietLogger(), Stepped: true})
			if err == nil {
				l.Close()
			}
			return err
		},
	},
	{
		name: "the folder after a new segment", path: "wal", when: 2, context: "after creating",
		run: func(dir string) error {
			l, err := Open(filepath.Join(dir, "wal"), Options{Logger: quietLogger(), SegmentSize: 1000, Stepped: true})
			if err != nil {
				return fmt.Errorf("open, before the fault: %w", err)
			}
			defer l.Close()
			if err := appendTestRecords(l, 1, 40); err != nil { // ~100 bytes each: past SegmentSize
				return err
			}
			return l.Flush()
		},
	},
	{
		name: "the folder after a truncation", path: "wal", when: 3, context: "after truncate front",
		run: func(dir string) error {
			l, err := Open(filepath.Join(dir, "wal"), Options{Logger: quietLogger(), SegmentSize: 1000, Stepped: true})
			if err != nil {
				return fmt.Errorf("open, before the fault: %w", err)
			}
			defer l.Close()
			if err := appendTestRecords(l, 1, 40); err != nil {
				return err
			}
			if err := l.Flush(); err != nil {
				return fmt.Errorf("flush, before the fault: %w", err)
			}
			return l.TruncateFront(20)
		},
	},
}

func TestFailedFsyncsOutsideTheFlusherAreSyncFailures(t *testing.T) {
	if v := os.Getenv(fsyncFaultChildEnv); v != "" {
		fsyncFaultChild(t, v)
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is needed to fail an fsync (apt-get install strace; .ci/run installs it)")
	}
	for i, f := range fsyncFaults {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			if f.prepare != nil {
				f.prepare(t, dir)
			}
			trace := filepath.Join(t.TempDir(), "trace.txt")
			target := filepath.Join(dir, f.path)
			cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync",
				"-e", fmt.Sprintf("inject=fsync:error=EIO:when=%d", f.when), "-P", target, "-o", trace,
				os.Args[0], "-test.run=^TestFailedFsyncsOutsideTheFlusherAreSyncFailures$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%s", fsyncFaultChildEnv, i, dir))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the traced child failed: %v\n%s", err, out)
			}
			b, err := os.ReadFile(trace)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), "(INJECTED)"); n != 1 {
				t.Fatalf("strace failed %d fsyncs of %s, want 1:\n%s", n, target, b)
			}
			result := childResult(string(out))
			switch {
			case result == "":
				t.Fatalf("the child said nothing of its result:\n%s", out)
			case !strings.HasPrefix(result, "sync-failed "):
				t.Fatalf("a failed fsync of %s came back as %s; want an error wrapping ErrSyncFailed", f.path, result)
			case !strings.Contains(result, f.context):
				t.Fatalf("the child's error does not name %q (another fsync failed?): %s", f.context, result)
			}
		})
	}
}

// childResult returns the child's RESULT line, without its prefix.
func childResult(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			return r
		}
	}
	return ""
}

// fsyncFaultChild runs scenario v ("<number>:<dir>") and prints its error
// as a RESULT line: "sync-failed", "failed" or "other", then the message.
// The scenarios' logs are Stepped and the goroutine is locked to its
// thread, so that every fsync is made by one thread: strace counts when=N
// per thread.
func fsyncFaultChild(t *testing.T, v string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	number, dir, _ := strings.Cut(v, ":")
	var i int
	if _, err := fmt.Sscan(number, &i); err != nil || i >= len(fsyncFaults) {
		t.Fatalf("bad %s=%q", fsyncFaultChildEnv, v)
	}
	err := fsyncFaults[i].run(dir)
	kind := "other"
	switch {
	case err == nil:
		kind = "nil"
	case errors.Is(err, ErrSyncFailed):
		kind = "sync-failed"
	case errors.Is(err, ErrFailed):
		kind = "failed"
	}
	fmt.Printf("RESULT %s %v\n", kind, err)
}

// appendTestRecords appends the test records first..last (appendRecords
// without a testing.T, for the child).
func appendTestRecords(l *Log, first, last uint64) error {
	for i := first; i <= last; i++ {
		if _, err := l.Append(testType(i), testPayload(i)); err != nil {
			return err
		}
	}
	return nil
}
