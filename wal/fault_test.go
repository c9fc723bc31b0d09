package wal

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var errInjected = errors.New("injected I/O error")

// faultStore wraps a Store and injects faults by batch number (1-based).
// In step mode every WriteBatch announces its batch on entered and waits for
// a value on proceed, which fixes the batch boundaries.
type faultStore struct {
	Store
	failWriteAt int           // this batch's WriteBatch fails...
	writePrefix int           // ...after writing this many of its entries
	failSyncAt  int           // the Sync after this batch fails
	loseFrom    int           // from this batch on, writes report success but are dropped
	syncDelay   time.Duration // latency added to every Sync
	step        bool
	entered     chan [2]uint64
	proceed     chan struct{}
	events      *eventLog

	mu      sync.Mutex
	batches int
}

func newFaultStore() *faultStore {
	return &faultStore{entered: make(chan [2]uint64), proceed: make(chan struct{})}
}

// openReal is an Options.OpenStore that wraps the real store.
func (s *faultStore) openReal(dir string, o StoreOptions) (Store, error) {
	inner, err := OpenTidwallStore(dir, o)
	s.Store = inner
	return s, err
}

func (s *faultStore) batch() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batches
}

func (s *faultStore) WriteBatch(b *Batch) (int, error) {
	s.mu.Lock()
	s.batches++
	n := s.batches
	s.mu.Unlock()
	if s.step {
		s.entered <- [2]uint64{b.FirstIndex(), b.LastIndex()}
		<-s.proceed
	}
	switch {
	case s.loseFrom > 0 && n >= s.loseFrom:
		return 0, nil // the lie
	case n == s.failWriteAt:
		if s.writePrefix > 0 {
			if _, err := s.Store.WriteBatch(prefixBatch(b, s.writePrefix)); err != nil {
				return 0, err
			}
		}
		return 0, errInjected
	}
	created, err := s.Store.WriteBatch(b)
	s.events.add(event{kind: "write", first: b.FirstIndex(), last: b.LastIndex(), created: created})
	return created, err
}

func (s *faultStore) Sync() error {
	time.Sleep(s.syncDelay)
	if s.failSyncAt > 0 && s.batch() == s.failSyncAt {
		return errInjected
	}
	s.events.add(event{kind: "sync"})
	return s.Store.Sync()
}

func (s *faultStore) SyncDir() error {
	s.events.add(event{kind: "syncdir"})
	return s.Store.SyncDir()
}

// prefixBatch returns a new batch holding the first n records of b.
func prefixBatch(b *Batch, n int) *Batch {
	prefix := &Batch{firstIndex: b.firstIndex}
	for i := 0; i < n; i++ {
		prefix.data = append(prefix.data, b.Frame(i)...)
		prefix.ends = append(prefix.ends, len(prefix.data))
	}
	return prefix
}

// stepScenario drives a step-mode faultStore through three batches:
// [1], [2..5], [6..8] (the third only if the second succeeds), and returns
// the result of a waiter for every index 1..8.
func stepScenario(t *testing.T, l *Log, s *faultStore) [9]error {
	t.Helper()
	var waiters [9]errWaiter
	for i := range waiters {
		waiters[i] = newErrWaiter()
	}
	appendRecords(t, l, 1, 1)
	l.Await(1, waiters[1])
	if got := <-s.entered; got != [2]uint64{1, 1} {
		t.Fatalf("batch 1 = %v", got)
	}
	appendRecords(t, l, 2, 5)
	for i := uint64(2); i <= 5; i++ {
		l.Await(i, waiters[i])
	}
	s.proceed <- struct{}{}
	if got := <-s.entered; got != [2]uint64{2, 5} {
		t.Fatalf("batch 2 = %v", got)
	}
	appendRecords(t, l, 6, 8)
	for i := uint64(6); i <= 8; i++ {
		l.Await(i, waiters[i])
	}
	s.proceed <- struct{}{}
	var results [9]error
	for i := 1; i <= 5; i++ {
		results[i] = waiters[i].wait(t)
	}
	if results[5] == nil {
		if got := <-s.entered; got != [2]uint64{6, 8} {
			t.Fatalf("batch 3 = %v", got)
		}
		s.proceed <- struct{}{}
	}
	for i := 6; i <= 8; i++ {
		results[i] = waiters[i].wait(t)
	}
	return results
}

func TestWriteAndSyncFailuresAreSticky(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*faultStore)
		reopened  uint64 // last record present after reopening with the real store
	}{
		{"write fails", func(s *faultStore) { s.failWriteAt = 2 }, 1},
		{"write fails after 2 of 4 records", func(s *faultStore) { s.failWriteAt, s.writePrefix = 2, 2 }, 3},
		{"sync fails", func(s *faultStore) { s.failSyncAt = 2 }, 5}, // written, never acknowledged
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newFaultStore()
			s.step = true
			c.configure(s)
			l := openLog(t, dir, Options{OpenStore: s.openReal})
			results := stepScenario(t, l, s)
			if results[1] != nil {
				t.Fatalf("record 1 (batch 1): %v", results[1])
			}
			for i := 2; i <= 8; i++ {
				if !errors.Is(results[i], ErrFailed) || !errors.Is(results[i], errInjected) {
					t.Fatalf("record %d: %v, want ErrFailed wrapping the cause", i, results[i])
				}
			}
			if l.DurableIndex() != 1 {
				t.Fatalf("DurableIndex %d covers failed records", l.DurableIndex())
			}
			if _, err := l.Append(1, nil); !errors.Is(err, ErrFailed) {
				t.Fatalf("Append after failure: %v", err)
			}
			if err := awaitDurable(t, l, 1); !errors.Is(err, ErrFailed) {
				t.Fatalf("Await after failure: %v", err)
			}
			if !errors.Is(l.Err(), ErrFailed) || !errors.Is(l.TruncateFront(2), ErrFailed) {
				t.Fatalf("Err %v", l.Err())
			}
			if err := l.Close(); !errors.Is(err, ErrFailed) {
				t.Fatalf("Close: %v", err)
			}
			if s.batch() != 2 {
				t.Fatalf("%d batches written: the failed log kept writing", s.batch())
			}

			l = openLog(t, dir, Options{})
			defer l.Close()
			checkRecords(t, l, 1, c.reopened)
		})
	}
}

// A disk that reports writes and fsyncs done and then loses them cannot be
// detected by the log: its waiters were told "durable". After reopening,
// the lost records are absent, the indexes stay contiguous, and the lost
// indexes are given out again. This test documents that limit.
func TestLostWritesCannotBeDetected(t *testing.T) {
	dir := t.TempDir()
	s := newFaultStore()
	s.step, s.loseFrom = true, 3
	l := openLog(t, dir, Options{OpenStore: s.openReal})
	results := stepScenario(t, l, s)
	for i := 1; i <= 8; i++ {
		if results[i] != nil {
			t.Fatalf("record %d: %v", i, results[i])
		}
	}
	if l.DurableIndex() != 8 {
		t.Fatalf("DurableIndex %d", l.DurableIndex())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, Options{})
	defer l.Close()
	checkRecords(t, l, 1, 5) // 6..8 are gone
	if index, err := l.Append(1, []byte("again")); err != nil || index != 6 {
		t.Fatalf("next Append: %d %v", index, err)
	}
}

// With slow fsyncs, one appender's records gather in large batches, and every
// waiter is released once, in order, with nil.
func TestSyncLatencyGroupsRecords(t *testing.T) {
	s := newFaultStore()
	s.syncDelay = 2 * time.Millisecond
	l := openLog(t, t.TempDir(), Options{OpenStore: s.openReal})
	const n = 3000
	var released, outOfOrder atomic.Uint64
	var last uint64 // touched only by the flusher
	for i := uint64(1); i <= n; i++ {
		appendRecords(t, l, i, i)
		index := i
		l.Await(index, WaiterFunc(func(err error) {
			if err != nil || index < last {
				outOfOrder.Add(1)
			}
			last = index
			released.Add(1)
		}))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	stats := l.Stats()
	if released.Load() != n || outOfOrder.Load() != 0 {
		t.Fatalf("%d released, %d out of order or failed", released.Load(), outOfOrder.Load())
	}
	if stats.Records != n || stats.Syncs > n/10 {
		t.Fatalf("stats %+v: records not grouped", stats)
	}
	t.Logf("%d records in %d batches (%.1f per fsync)", stats.Records, stats.Batches, float64(stats.Records)/float64(stats.Batches))
}

// Append blocks only while the pending batch is full and the flusher busy;
// Await blocks only while the waiter queue is full.
func TestAppendAndAwaitBlockWhenFull(t *testing.T) {
	s := newFaultStore()
	s.step = true
	s.Store = newMemStore(nil)
	l := openLog(t, t.TempDir(), Options{OpenStore: func(string, StoreOptions) (Store, error) { return s, nil }, MaxBatchRecords: 4, MaxWaiters: 2})
	appendRecords(t, l, 1, 1)
	<-s.entered               // batch [1] is being written
	appendRecords(t, l, 2, 5) // fills the pending batch
	l.Await(2, newErrWaiter())
	l.Await(3, newErrWaiter()) // fills the waiter queue

	appended := make(chan uint64)
	go func() {
		index, _ := l.Append(1, nil)
		appended <- index
	}()
	awaited := make(chan struct{})
	go func() {
		l.Await(4, WaiterFunc(func(error) {}))
		close(awaited)
	}()
	select {
	case <-appended:
		t.Fatal("Append did not block on a full batch")
	case <-awaited:
		t.Fatal("Await did not block on a full waiter queue")
	case <-time.After(50 * time.Millisecond):
	}
	s.proceed <- struct{}{} // batch [1] done; the flusher takes [2..5]
	if index := <-appended; index != 6 {
		t.Fatalf("blocked Append got index %d", index)
	}
	<-s.entered
	s.proceed <- struct{}{} // [2..5] done: waiters released, queue has room
	<-awaited
	<-s.entered
	s.proceed <- struct{}{} // [6]
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
