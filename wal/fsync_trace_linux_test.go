//go:build linux

package wal

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The durability promise checked where it is kept: at the system calls.
// Every other test of this package and the simulator run over stores that
// say they synced; only this one watches the kernel see an fsync. A child
// process (this test binary again) appends records one at a time through
// the real tidwall store, waits for each acknowledgement (Await), and then
// writes "ack N" to a marker file; strace records both. Between two
// acknowledgements there must be a completed fsync of a segment file: a
// store whose Sync did nothing (or synced the wrong file, or acknowledged
// before the fsync returned) fails here.

const fsyncChildEnv = "SECKILL_WAL_FSYNC_CHILD"

// fsyncChildAppends is how many sequential acknowledged appends the child
// makes.
const fsyncChildAppends = 40

func TestAcknowledgedAppendsAreFsyncedFirst(t *testing.T) {
	if dir := os.Getenv(fsyncChildEnv); dir != "" {
		fsyncChild(t, dir)
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is needed to watch the fsyncs (apt-get install strace; .ci/run installs it)")
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.txt")
	cmd := exec.Command(strace, "-f", "-y", "-qq", "-e", "signal=none", "-e", "trace=fsync,fdatasync,write",
		"-s", "32", "-o", trace, os.Args[0], "-test.run=^TestAcknowledgedAppendsAreFsyncedFirst$", "-test.count=1")
	cmd.Env = append(os.Environ(), fsyncChildEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the traced child failed: %v\n%s", err, out)
	}
	events, err := readFsyncTrace(trace)
	if err != nil {
		t.Fatal(err)
	}
	// wrote: a segment write since the last acknowledgement; synced: a
	// completed fsync of a segment file since the last segment write.
	wrote, synced, acks := false, false, 0
	for _, e := range events {
		switch e.kind {
		case "write":
			wrote, synced = true, false
		case "sync":
			synced = true
		case "ack":
			acks++
			if e.ack != acks {
				t.Fatalf("acknowledgement %d seen as number %d: the trace is out of order", e.ack, acks)
			}
			if !wrote {
				t.Fatalf("record %d acknowledged with no write to a segment file since the previous acknowledgement", e.ack)
			}
			if !synced {
				t.Fatalf("record %d acknowledged before an fsync of the segment file it was written to", e.ack)
			}
			wrote, synced = false, false
		}
	}
	if acks != fsyncChildAppends {
		t.Fatalf("the trace shows %d acknowledgements, want %d", acks, fsyncChildAppends)
	}
}

// fsyncChild is the traced side: sequential appends, each acknowledged
// before the next, each acknowledgement marked by a write to dir/acks.
func fsyncChild(t *testing.T, dir string) {
	l := openLog(t, filepath.Join(dir, "wal"), Options{SegmentSize: 1 << 20})
	defer l.Close()
	marks, err := os.Create(filepath.Join(dir, "acks"))
	if err != nil {
		t.Fatal(err)
	}
	defer marks.Close()
	for i := uint64(1); i <= fsyncChildAppends; i++ {
		appendRecords(t, l, i, i)
		if err := awaitDurable(t, l, i); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(marks, "ack %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
}

// fsyncEvent is one line of the trace that matters: the start of a write
// to a segment file, a completed fsync of one, or the start of an
// acknowledgement's marker write.
type fsyncEvent struct {
	kind string // "write" (to a segment file), "sync" or "ack"
	ack  int
}

var (
	// 1234 fsync(5</tmp/x/wal/00000000000000000001>) = 0
	traceCall = regexp.MustCompile(`^(\d+)\s+(fsync|fdatasync|write)\((\d+)<([^>]*)>(.*)$`)
	// 1234 <... fsync resumed>) = 0
	traceResumed  = regexp.MustCompile(`^(\d+)\s+<\.\.\. (fsync|fdatasync|write) resumed>(.*)$`)
	segmentPathRE = regexp.MustCompile(`/wal/\d{20}$`)
	ackMark       = regexp.MustCompile(`"ack (\d+)\\n"`)
)

// readFsyncTrace turns strace's output into events in the order strace saw
// them: an fsync counts when it returned 0 (a call interrupted by another
// thread's is matched with its resumption), a write when it began.
func readFsyncTrace(path string) ([]fsyncEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pending := map[string]bool{} // pids with an unfinished fsync of a segment file
	var events []fsyncEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := traceResumed.FindStringSubmatch(line); m != nil {
			ok := pending[m[1]]
			delete(pending, m[1])
			if ok && m[2] != "write" && strings.HasSuffix(strings.TrimSpace(m[3]), "= 0") {
				events = append(events, fsyncEvent{kind: "sync"})
			}
			continue
		}
		m := traceCall.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, call, file, rest := m[1], m[2], m[4], m[5]
		switch call {
		case "write":
			if segmentPathRE.MatchString(file) {
				events = append(events, fsyncEvent{kind: "write"})
				continue
			}
			if filepath.Base(file) != "acks" {
				continue
			}
			a := ackMark.FindStringSubmatch(rest)
			if a == nil {
				return nil, fmt.Errorf("a marker write without its text: %q", line)
			}
			n, _ := strconv.Atoi(a[1])
			events = append(events, fsyncEvent{kind: "ack", ack: n})
		default:
			if !segmentPathRE.MatchString(file) {
				continue
			}
			if strings.Contains(rest, "<unfinished ...>") {
				pending[pid] = true
				continue
			}
			if strings.HasSuffix(strings.TrimSpace(rest), "= 0") {
				events = append(events, fsyncEvent{kind: "sync"})
			}
		}
	}
	return events, sc.Err()
}
