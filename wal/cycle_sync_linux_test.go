//go:build linux

package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tidwall/wal fsyncs a full segment inside WriteBatch, before it creates
// the next one. A failure of that fsync is a failed fsync like the
// flusher's own: the log must say ErrSyncFailed, or its owner rebuilds
// the SKU from a page cache that may show records the disk lost. The
// segment's descriptor is pointed at /dev/null, where a write succeeds
// and an fsync fails (EINVAL), so the fsync that fails is tidwall's own.
func TestFailedFsyncOfAFullSegmentIsASyncFailure(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{SegmentSize: 1000, Stepped: true})
	defer l.Close()
	appendRecords(t, l, 1, 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segment := segmentPath(dir, segmentName(1))
	fd := descriptorOf(t, segment)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := syscall.Dup3(int(null.Fd()), fd, syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	appendRecords(t, l, 2, 40) // ~100 bytes each: one batch past SegmentSize
	err = l.Flush()
	switch {
	case err == nil:
		t.Fatal("the batch over a segment whose fsync fails was acknowledged")
	case !strings.Contains(err.Error(), "write records 2..40"):
		t.Fatalf("the batch failed outside WriteBatch (%v): the test did not reach tidwall's fsync of the full segment", err)
	case !errors.Is(err, ErrFailed) || !errors.Is(err, ErrSyncFailed):
		t.Fatalf("a failed fsync of a full segment inside WriteBatch: %v; want it to wrap ErrFailed and ErrSyncFailed", err)
	}
	if l.DurableIndex() != 1 {
		t.Fatalf("DurableIndex %d after the failed batch, want 1", l.DurableIndex())
	}
}

// descriptorOf returns the one descriptor of this process open on path.
func descriptorOf(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := -1
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || target != path {
			continue
		}
		if found >= 0 {
			t.Fatalf("more than one descriptor on %s", path)
		}
		if found, err = strconv.Atoi(e.Name()); err != nil {
			t.Fatal(err)
		}
	}
	if found < 0 {
		t.Fatalf("no descriptor on %s", path)
	}
	return found
}
