package wal

import (
	"math/rand/v2"
	"os"
	"testing"
)

// The store's mirror of tidwall's cycle rule must report exactly the segment
// files that WriteBatch creates: checked against the directory after every
// batch, across truncations, reopenings, and entries larger than a segment.
func TestTidwallStoreReportsSegmentCreation(t *testing.T) {
	dir := t.TempDir()
	const segmentSize = 700
	open := func() Store {
		s, err := OpenTidwallStore(dir, StoreOptions{SegmentSize: segmentSize})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	countFiles := func() int {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	s := open()
	rng := rand.New(rand.NewPCG(3, 4))
	next := uint64(1)
	var batch Batch
	totalCreated := 0
	for round := 0; round < 400; round++ {
		batch.reset()
		for range 1 + rng.IntN(12) {
			size := rng.IntN(120)
			if rng.IntN(50) == 0 {
				size = segmentSize + rng.IntN(300) // larger than a segment
			}
			batch.add(1, next, make([]byte, size))
			next++
		}
		before := countFiles()
		created, err := s.WriteBatch(&batch)
		if err != nil {
			t.Fatal(err)
		}
		if after := countFiles(); after != before+created {
			t.Fatalf("round %d: %d files -> %d, store reported %d created", round, before, after, created)
		}
		totalCreated += created
		switch round % 100 {
		case 40: // drop older segments, or cut into the tail one
			if err := s.TruncateFront(next - uint64(1+rng.IntN(5))); err != nil {
				t.Fatal(err)
			}
		case 70:
			if err := s.TruncateFront(next); err != nil { // empty
				t.Fatal(err)
			}
		case 90:
			s.Close()
			s = open()
		}
	}
	s.Close()
	if totalCreated < 50 {
		t.Fatalf("only %d segments created: the test did not exercise cycling", totalCreated)
	}
}

// At the Log level: a directory fsync follows every batch that created a
// segment file, before any waiter of that batch is released.
func TestDirectorySyncedWhenSegmentCreated(t *testing.T) {
	dir := t.TempDir()
	events := &eventLog{}
	s := newFaultStore()
	s.events = events
	l := openLog(t, dir, Options{SegmentSize: 1000, OpenStore: s.openReal})
	const n = 400
	for i := uint64(1); i <= n; i++ {
		appendRecords(t, l, i, i)
		l.Await(i, &recordingWaiter{index: i, events: events})
		if i%5 == 0 {
			awaitDurable(t, l, i) // vary the batch sizes
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stats := l.Stats()
	files := len(segmentPaths(t, dir))
	if stats.SegmentsCreated == 0 || int(stats.SegmentsCreated) != files-1 {
		t.Fatalf("%d segments created, %d files", stats.SegmentsCreated, files)
	}
	var written, synced, dirSynced, unsyncedSegment uint64
	batchesCreating := 0
	for _, ev := range events.snapshot() {
		switch ev.kind {
		case "write":
			written = ev.last
			if ev.created > 0 {
				unsyncedSegment = ev.last
				batchesCreating++
			}
		case "sync":
			synced = written
		case "syncdir":
			dirSynced = written
		case "release":
			if ev.last > synced || (unsyncedSegment != 0 && ev.last >= unsyncedSegment && dirSynced < unsyncedSegment) {
				t.Fatalf("waiter %d released: synced %d, directory synced %d, segment created by %d",
					ev.last, synced, dirSynced, unsyncedSegment)
			}
		}
	}
	// One directory fsync at Open, then one per batch that created segments.
	if want := uint64(1 + batchesCreating); stats.DirSyncs != want {
		t.Fatalf("%d directory fsyncs, want %d", stats.DirSyncs, want)
	}
}
