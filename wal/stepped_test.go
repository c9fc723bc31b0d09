package wal

import (
	"errors"
	"testing"
)

// steppedLog opens a Stepped log over an in-memory store wrapped in a
// faultStore; events records every store call.
func steppedLog(t *testing.T, opts Options) (*Log, *faultStore, *eventLog) {
	t.Helper()
	events := &eventLog{}
	s := newFaultStore()
	s.Store = newMemStore(events) // it records the calls
	opts.Stepped = true
	opts.OpenStore = func(string, StoreOptions) (Store, error) { return s, nil }
	return openLog(t, t.TempDir(), opts), s, events
}

// In Stepped mode nothing is written, synced or released until Flush, which
// does all three on the caller's goroutine, in that order.
func TestSteppedFlushWritesSyncsThenReleases(t *testing.T) {
	l, _, events := steppedLog(t, Options{})
	opened := len(events.snapshot())
	appendRecords(t, l, 1, 3)
	released := 0
	l.Await(2, WaiterFunc(func(err error) {
		if err != nil {
			t.Errorf("waiter 2: %v", err)
		}
		released++
	}))
	if got := len(events.snapshot()); got != opened || l.DurableIndex() != 0 || released != 0 {
		t.Fatalf("before Flush: %d store calls after Open's %d, durable %d, released %d", got, opened, l.DurableIndex(), released)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.DurableIndex() != 3 || released != 1 {
		t.Fatalf("after Flush: durable %d, released %d; want 3, 1", l.DurableIndex(), released)
	}
	var kinds []string
	for _, e := range events.snapshot()[opened:] {
		kinds = append(kinds, e.kind)
	}
	if want := "write sync"; join(kinds) != want {
		t.Fatalf("store calls %q, want %q", join(kinds), want)
	}
	if err := l.Flush(); err != nil { // nothing pending: no store call
		t.Fatal(err)
	}
	if got := len(events.snapshot()); got != opened+2 {
		t.Fatalf("an empty Flush called the store: %d events", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// A failed fsync in Stepped mode is sticky like in the goroutine mode: the
// batch's waiters get ErrSyncFailed, DurableIndex stays, Append refuses,
// and a second Flush does not retry the fsync.
func TestSteppedFailedSyncIsNeverAcknowledged(t *testing.T) {
	l, s, events := steppedLog(t, Options{})
	appendRecords(t, l, 1, 1)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	s.failSyncAt = 2
	appendRecords(t, l, 2, 4)
	var got error
	l.Await(4, WaiterFunc(func(err error) { got = err }))
	if err := l.Flush(); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Flush: %v, want ErrSyncFailed", err)
	}
	if !errors.Is(got, ErrFailed) || l.DurableIndex() != 1 {
		t.Fatalf("waiter got %v, durable %d; want ErrFailed, 1", got, l.DurableIndex())
	}
	before := len(events.snapshot())
	if err := l.Flush(); !errors.Is(err, ErrFailed) || len(events.snapshot()) != before {
		t.Fatalf("second Flush: %v, store calls %d -> %d", err, before, len(events.snapshot()))
	}
	if _, err := l.Append(1, nil); !errors.Is(err, ErrFailed) {
		t.Fatalf("Append after failure: %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close: %v", err)
	}
}

// A full pending batch or a full waiter queue is flushed by the call that
// finds it full, instead of blocking on a flusher that does not exist.
func TestSteppedBoundsFlushInsteadOfBlocking(t *testing.T) {
	l, _, _ := steppedLog(t, Options{MaxBatchRecords: 4, MaxWaiters: 2})
	appendRecords(t, l, 1, 5) // the fifth Append flushes 1..4
	if l.DurableIndex() != 4 {
		t.Fatalf("durable %d after a full batch, want 4", l.DurableIndex())
	}
	released := []uint64{}
	for _, i := range []uint64{5, 5} {
		l.Await(i, WaiterFunc(func(err error) {
			if err != nil {
				t.Errorf("waiter: %v", err)
			}
			released = append(released, i)
		}))
	}
	if len(released) != 0 {
		t.Fatalf("released %v before any flush", released)
	}
	// The queue is full: the third Await flushes, releases the two, and is
	// then answered at once (its record is durable).
	l.Await(5, WaiterFunc(func(err error) { released = append(released, 5) }))
	if len(released) != 3 || l.DurableIndex() != 5 {
		t.Fatalf("released %v, durable %d; want three released, 5", released, l.DurableIndex())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFlushNeedsStepped(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	if err := l.Flush(); !errors.Is(err, ErrNotStepped) {
		t.Fatalf("Flush on a goroutine-mode log: %v", err)
	}
}
