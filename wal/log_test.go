package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRoundTripAndReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "sku-1") // parents created too
	l := openLog(t, dir, Options{})
	if l.FirstIndex() != 0 || l.LastIndex() != 0 || l.DurableIndex() != 0 {
		t.Fatalf("new log indexes %d %d %d", l.FirstIndex(), l.LastIndex(), l.DurableIndex())
	}
	appendRecords(t, l, 1, 100)
	if err := awaitDurable(t, l, 100); err != nil {
		t.Fatal(err)
	}
	if l.FirstIndex() != 1 {
		t.Fatalf("FirstIndex %d", l.FirstIndex())
	}
	checkRecords(t, l, 1, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openLog(t, dir, Options{})
	checkRecords(t, l, 1, 100)
	appendRecords(t, l, 101, 150)     // indexes continue
	if err := l.Close(); err != nil { // Close flushes what is pending
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	defer l.Close()
	checkRecords(t, l, 1, 150)
	records, err := replayAll(l, 140)
	if err != nil || len(records) != 11 || records[0].index != 140 {
		t.Fatalf("Replay(140): %d records, %v", len(records), err)
	}
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	appendRecords(t, l, 1, 10)
	awaitDurable(t, l, 10)
	stop := errors.New("stop")
	calls := 0
	err := l.Replay(1, func(uint64, byte, []byte) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 3 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

func TestTruncateFrontThenReopen(t *testing.T) {
	for _, segmentSize := range []int{0, 2000} { // one segment; many
		t.Run(fmt.Sprint("segment size ", segmentSize), func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentSize: segmentSize}
			l := openLog(t, dir, opts)
			appendRecords(t, l, 1, 300)
			awaitDurable(t, l, 300)
			if err := l.TruncateFront(301 + 1); !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("TruncateFront beyond durable: %v", err)
			}
			if err := l.TruncateFront(120); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateFront(50); err != nil { // below FirstIndex: no-op
				t.Fatal(err)
			}
			if l.FirstIndex() != 120 {
				t.Fatalf("FirstIndex %d", l.FirstIndex())
			}
			checkRecords(t, l, 120, 300)
			appendRecords(t, l, 301, 310)
			l.Close()

			l = openLog(t, dir, opts)
			if l.FirstIndex() != 120 {
				t.Fatalf("FirstIndex after reopen %d", l.FirstIndex())
			}
			checkRecords(t, l, 120, 310)
			// A snapshot covering everything empties the log.
			if err := l.TruncateFront(311); err != nil {
				t.Fatal(err)
			}
			if l.FirstIndex() != 0 || l.LastIndex() != 310 {
				t.Fatalf("after emptying: first %d last %d", l.FirstIndex(), l.LastIndex())
			}
			checkRecords(t, l, 311, 310)
			l.Close()

			l = openLog(t, dir, opts)
			if l.FirstIndex() != 0 || l.LastIndex() != 310 {
				t.Fatalf("empty log reopened: first %d last %d", l.FirstIndex(), l.LastIndex())
			}
			appendRecords(t, l, 311, 320)
			awaitDurable(t, l, 320)
			if l.FirstIndex() != 311 {
				t.Fatalf("FirstIndex %d", l.FirstIndex())
			}
			checkRecords(t, l, 311, 320)
			l.Close()
			l = openLog(t, dir, opts)
			checkRecords(t, l, 311, 320)
			l.Close()
		})
	}
}

func TestAppendRejects(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	if _, err := l.Append(0, nil); !errors.Is(err, ErrInvalidType) {
		t.Fatalf("type 0: %v", err)
	}
	if _, err := l.Append(1, make([]byte, MaxPayloadSize+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if index, err := l.Append(1, make([]byte, MaxPayloadSize)); err != nil || index != 1 {
		t.Fatalf("largest payload: %d %v", index, err)
	}
	if l.LastIndex() != 1 {
		t.Fatalf("rejected appends took indexes: LastIndex %d", l.LastIndex())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(1, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := awaitDurable(t, l, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Await after Close: %v", err)
	}
	if err := l.Replay(1, func(uint64, byte, []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Replay after Close: %v", err)
	}
	if !errors.Is(l.Err(), ErrClosed) {
		t.Fatalf("Err after Close: %v", l.Err())
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	for _, opts := range []Options{{Fsync: 7}, {SegmentSize: -1}, {MaxBatchRecords: -1}, {MaxBatchBytes: -1}, {MaxWaiters: -1}} {
		if _, err := Open(t.TempDir(), opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", opts, err)
		}
	}
}

func TestOpenOnAFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	os.WriteFile(path, []byte("x"), 0o640)
	if _, err := Open(path, Options{Logger: quietLogger()}); err == nil {
		t.Fatal("Open on a regular file succeeded")
	}
}

func TestAwaitSemantics(t *testing.T) {
	gate := make(chan struct{})
	store := &gatedStore{Store: newMemStore(nil), gate: gate}
	l := openLog(t, t.TempDir(), Options{OpenStore: store.open})
	defer l.Close()

	// Nothing appended: index 0 is durable at once, in this goroutine.
	if err := awaitDurable(t, l, 0); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	released := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), order...)
	}
	add := func(name string, index uint64) {
		l.Await(index, WaiterFunc(func(err error) {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}))
	}
	appendRecords(t, l, 1, 3) // the flusher blocks in WriteBatch on the gate
	add("a@3", 3)
	add("b@1", 1) // lower than a queued waiter: raised, released after a
	add("c@3", 3)
	if got := released(); len(got) != 0 {
		t.Fatalf("released before durable: %v", got)
	}
	close(gate)
	if err := awaitDurable(t, l, 3); err != nil {
		t.Fatal(err)
	}
	// DurableIndex moves just before the flusher releases the waiters, and
	// the flusher finishes its release pass a moment after the last call.
	deadline := time.Now().Add(time.Minute) // a bound for a flusher that never releases
	for len(released()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := strings.Join(released(), " "); got != "a@3 b@1 c@3" {
		t.Fatalf("release order %q", got)
	}
	// Durable, nothing queued: released at once once the release pass is
	// over (while it runs, a new waiter queues behind it to keep the order).
	for {
		before := len(released())
		add("d@2", 2)
		if len(released()) == before+1 {
			break
		}
		for len(released()) == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // queued behind the pass: released with it
		}
		if time.Now().After(deadline) {
			t.Fatalf("durable waiter never released: %v", released())
		}
	}

	defer func() {
		if recover() == nil {
			t.Fatal("Await beyond LastIndex did not panic")
		}
	}()
	l.Await(4, WaiterFunc(func(error) {}))
}
