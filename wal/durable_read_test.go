package wal

import (
	"errors"
	"testing"
)

// readAll reads every durable record from from on in pages of page records.
func readAll(t *testing.T, l *Log, from uint64, page int) []record {
	t.Helper()
	var records []record
	for {
		next, err := l.ReadDurable(from, page, func(index uint64, typ byte, payload []byte) error {
			records = append(records, record{index, typ, string(payload)})
			return nil
		})
		if err != nil {
			t.Fatalf("ReadDurable(%d): %v", from, err)
		}
		if next == from {
			return records
		}
		from = next
	}
}

func checkTestRecords(t *testing.T, got []record, first, last uint64) {
	t.Helper()
	if uint64(len(got)) != last-first+1 {
		t.Fatalf("read %d records, want %d..%d", len(got), first, last)
	}
	for i, r := range got {
		index := first + uint64(i)
		if r.index != index || r.typ != testType(index) || r.payload != string(testPayload(index)) {
			t.Fatalf("record %d = %+v, want index %d", i, r, index)
		}
	}
}

// The files are read directly, across segments, in pages of any size,
// while the log runs; a truncated record answers ErrCompacted.
func TestReadDurableAcrossSegments(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{SegmentSize: 512})
	defer l.Close()
	appendRecords(t, l, 1, 300)
	if err := awaitDurable(t, l, 300); err != nil {
		t.Fatal(err)
	}
	if segs, _ := Segments(l.Dir()); len(segs) < 5 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	for _, page := range []int{1, 7, 64, 1000} {
		checkTestRecords(t, readAll(t, l, 0, page), 1, 300)
	}
	checkTestRecords(t, readAll(t, l, 123, 10), 123, 300)
	cut, err := l.TruncateBefore(150)
	if err != nil || cut == 0 {
		t.Fatalf("TruncateBefore: cut %d, %v", cut, err)
	}
	if _, err := l.ReadDurable(cut-1, 10, func(uint64, byte, []byte) error { return nil }); !errors.Is(err, ErrCompacted) {
		t.Fatalf("read below the first index: %v, want ErrCompacted", err)
	}
	checkTestRecords(t, readAll(t, l, cut, 13), cut, 300)
	appendRecords(t, l, 301, 320)
	if err := awaitDurable(t, l, 320); err != nil {
		t.Fatal(err)
	}
	checkTestRecords(t, readAll(t, l, 290, 5), 290, 320)
}

// The in-memory twin (no segment files) is read through the Store.
func TestReadDurableThroughStore(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{OpenStore: func(string, StoreOptions) (Store, error) { return newMemStore(nil), nil }})
	defer l.Close()
	appendRecords(t, l, 1, 40)
	if err := awaitDurable(t, l, 40); err != nil {
		t.Fatal(err)
	}
	checkTestRecords(t, readAll(t, l, 0, 9), 1, 40)
}

// segmentedFaultStore makes ReadDurable read the files under a faultStore.
type segmentedFaultStore struct{ *faultStore }

func (s segmentedFaultStore) SegmentStarts() ([]uint64, error) {
	return s.faultStore.Store.(SegmentedStore).SegmentStarts()
}

// A batch whose fsync failed is written to the file but never read, and
// DurableAfter wakes its waiters on the failure.
func TestReadDurableNeverPassesAFailedSync(t *testing.T) {
	fs := newFaultStore()
	l := openLog(t, t.TempDir(), Options{OpenStore: func(dir string, o StoreOptions) (Store, error) {
		_, err := fs.openReal(dir, o)
		return segmentedFaultStore{fs}, err
	}})
	defer l.Close()
	appendRecords(t, l, 1, 3)
	if err := awaitDurable(t, l, 3); err != nil {
		t.Fatal(err)
	}
	wake := l.DurableAfter(3)
	select {
	case <-wake:
		t.Fatal("DurableAfter(3) closed with DurableIndex 3")
	default:
	}
	fs.failSyncAt = fs.batch() + 1 // the next batch's fsync fails
	// One record: a second Append may meet the log already failed by the
	// first one's batch (fail-stop), which is not what this test is about.
	appendRecords(t, l, 4, 4)
	if err := awaitDurable(t, l, 4); err == nil {
		t.Fatal("the failed fsync was acknowledged")
	}
	<-wake
	if l.DurableIndex() != 3 {
		t.Fatalf("DurableIndex %d after a failed fsync, want 3", l.DurableIndex())
	}
	if _, err := l.ReadDurable(1, 10, func(index uint64, _ byte, _ []byte) error { return nil }); !errors.Is(err, ErrFailed) {
		t.Fatalf("ReadDurable on a failed log: %v, want ErrFailed", err)
	}
}

// DurableAfter closes once a later batch is durable, and at once when it
// already is.
func TestDurableAfter(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendRecords(t, l, 1, 2)
	if err := awaitDurable(t, l, 2); err != nil {
		t.Fatal(err)
	}
	<-l.DurableAfter(1)
	wake := l.DurableAfter(2)
	appendRecords(t, l, 3, 3)
	<-wake
	if l.DurableIndex() < 3 {
		t.Fatalf("woken at DurableIndex %d", l.DurableIndex())
	}
	wake = l.DurableAfter(3)
	l.Close()
	<-wake
}
