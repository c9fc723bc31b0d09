package wal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// record is one replayed record.
type record struct {
	index   uint64
	typ     byte
	payload string
}

// testPayload is the payload of record index in most tests: ~60 bytes.
func testPayload(index uint64) []byte {
	return fmt.Appendf(nil, "record %08d reserved token for user u-%08d at 1700000000", index, index*7)
}

func testType(index uint64) byte { return byte(index%9) + 1 }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// captureLogger records every log line's message and attributes.
type captureLogger struct {
	mu    sync.Mutex
	lines []string
}

func (c *captureLogger) logger() *slog.Logger { return slog.New(c) }

func (c *captureLogger) Enabled(context.Context, slog.Level) bool { return true }
func (c *captureLogger) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	c.mu.Lock()
	c.lines = append(c.lines, b.String())
	c.mu.Unlock()
	return nil
}
func (c *captureLogger) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captureLogger) WithGroup(string) slog.Handler      { return c }

func (c *captureLogger) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b bytes.Buffer
	for _, line := range c.lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

// errWaiter reports its one result on a channel.
type errWaiter chan error

func newErrWaiter() errWaiter         { return make(errWaiter, 1) }
func (w errWaiter) Durable(err error) { w <- err }
func (w errWaiter) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-w:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("waiter never released")
		return nil
	}
}

// awaitDurable blocks until index is durable or the log failed.
func awaitDurable(t testing.TB, l *Log, index uint64) error {
	t.Helper()
	w := newErrWaiter()
	l.Await(index, w)
	return w.wait(t)
}

// appendRecords appends the test records first..last and returns the last
// index; it fails the test on any error.
func appendRecords(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	for i := first; i <= last; i++ {
		index, err := l.Append(testType(i), testPayload(i))
		if err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
		if index != i {
			t.Fatalf("Append returned index %d, want %d", index, i)
		}
	}
}

// writeLog creates a log in dir holding the test records 1..n, durable, and
// closes it.
func writeLog(t testing.TB, dir string, n uint64, opts Options) {
	t.Helper()
	l := openLog(t, dir, opts)
	appendRecords(t, l, 1, n)
	if err := awaitDurable(t, l, n); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func replayAll(l *Log, from uint64) ([]record, error) {
	var records []record
	err := l.Replay(from, func(index uint64, typ byte, payload []byte) error {
		records = append(records, record{index, typ, string(payload)})
		return nil
	})
	return records, err
}

// checkRecords asserts that l replays exactly the test records first..last.
func checkRecords(t testing.TB, l *Log, first, last uint64) {
	t.Helper()
	records, err := replayAll(l, 0)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	want := int(last - first + 1)
	if first > last {
		want = 0
	}
	if len(records) != want {
		t.Fatalf("replayed %d records, want %d (%d..%d)", len(records), want, first, last)
	}
	for i, r := range records {
		index := first + uint64(i)
		if r.index != index || r.typ != testType(index) || r.payload != string(testPayload(index)) {
			t.Fatalf("record %d = %+v, want index %d type %d payload %q", i, r, index, testType(index), testPayload(index))
		}
	}
	if l.LastIndex() != last || l.DurableIndex() != last {
		t.Fatalf("LastIndex %d DurableIndex %d, want %d", l.LastIndex(), l.DurableIndex(), last)
	}
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// segmentPaths returns the segment files of dir in order.
func segmentPaths(t testing.TB, dir string) []string {
	t.Helper()
	files, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f.name))
	}
	return paths
}

// entryOffsets returns the start offset of every entry in a valid segment.
func entryOffsets(t testing.TB, data []byte) []int {
	t.Helper()
	var offsets []int
	for pos := 0; pos < len(data); {
		_, next, fault := entryAt(data, pos)
		if fault != "" {
			t.Fatalf("entry at %d: %s", pos, fault)
		}
		offsets = append(offsets, pos)
		pos = next
	}
	return offsets
}
