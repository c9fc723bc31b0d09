//go:build linux

package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openDescriptors returns the descriptors of this process that name a path
// under root, read from /proc/self/fd, split into directories and others.
func openDescriptors(t *testing.T, root string) (dirs, files []string) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, root+string(filepath.Separator)) {
			continue // closed meanwhile (the ReadDir's own descriptor), or elsewhere
		}
		if info, err := os.Stat(target); err == nil && info.IsDir() {
			dirs = append(dirs, target)
		} else {
			files = append(files, target)
		}
	}
	return dirs, files
}

// An open log holds one descriptor at rest, its tail segment, and no
// directory: with thousands of logs per process a second descriptor per log
// halves the logs that fit under the open-files limit. Segments are created
// and the directory fsynced (Open, a new segment, TruncateFront) on the
// way, and the descriptors counted after each.
func TestOpenLogHoldsNoDirectoryDescriptor(t *testing.T) {
	root := t.TempDir()
	const logs = 20
	var open []*Log
	for i := range logs {
		l := openLog(t, filepath.Join(root, fmt.Sprintf("log-%02d", i)), Options{SegmentSize: 1000})
		open = append(open, l)
		appendRecords(t, l, 1, 40) // ~100 bytes each: a few new segments
		if err := awaitDurable(t, l, 40); err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateFront(20); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.SegmentsCreated == 0 || s.DirSyncs < 3 {
			t.Fatalf("log %d: %+v: the test did not create a segment, truncate and fsync the directory", i, s)
		}
	}
	dirs, files := openDescriptors(t, root)
	if len(dirs) != 0 || len(files) != logs {
		t.Fatalf("%d logs open hold %d directory descriptors (%v) and %d others (%v); want 0 and %d (one tail segment each)",
			logs, len(dirs), dirs[:min(len(dirs), 2)], len(files), files[:min(len(files), 2)], logs)
	}
	for _, l := range open {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if dirs, files := openDescriptors(t, root); len(dirs)+len(files) != 0 {
		t.Fatalf("closed logs still hold %v %v", dirs, files)
	}
}
