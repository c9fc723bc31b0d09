package wal

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One appender (the actor) appends many records while the flusher writes and
// releases waiters; other goroutines read the indexes. Every waiter must be
// released once, with nil, in index order, and only after a Sync that
// followed the write of its record.
func TestWaitersReleasedInOrderOnlyAfterSync(t *testing.T) {
	events := &eventLog{}
	s := newFaultStore()
	s.Store = newMemStore(nil)
	s.events = events
	s.syncDelay = 50 * time.Microsecond
	opts := Options{
		OpenStore:       func(string, StoreOptions) (Store, error) { return s, nil },
		MaxBatchRecords: 64, // small limits: Append and Await block at times
		MaxWaiters:      100,
	}
	l := openLog(t, t.TempDir(), opts)

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if l.DurableIndex() > l.LastIndex() {
					t.Error("DurableIndex ahead of LastIndex")
					return
				}
				_ = l.Stats()
				_ = l.FirstIndex()
				runtime.Gosched() // readers share 2 cores with the appender and flusher
			}
		}()
	}

	const n = 20000
	var awaited atomic.Int64
	for i := uint64(1); i <= n; i++ {
		appendRecords(t, l, i, i)
		l.Await(i, &recordingWaiter{index: i, events: events})
		awaited.Add(1)
		if i%7 == 0 { // a rejection decided on not-yet-durable state
			l.Await(l.LastIndex(), &recordingWaiter{index: l.LastIndex(), events: events})
			awaited.Add(1)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()

	var written, synced, lastReleased uint64
	releases := 0
	for _, ev := range events.snapshot() {
		switch ev.kind {
		case "write":
			if ev.first != written+1 {
				t.Fatalf("write %d..%d after %d", ev.first, ev.last, written)
			}
			written = ev.last
		case "sync":
			synced = written
		case "release":
			releases++
			if ev.err != nil {
				t.Fatalf("release of %d: %v", ev.last, ev.err)
			}
			if ev.last > synced {
				t.Fatalf("waiter %d released with only %d synced", ev.last, synced)
			}
			if ev.last < lastReleased {
				t.Fatalf("waiter %d released after %d", ev.last, lastReleased)
			}
			lastReleased = ev.last
		}
	}
	if int64(releases) != awaited.Load() || written != n {
		t.Fatalf("%d releases for %d waiters; %d records written", releases, awaited.Load(), written)
	}
	stats := l.Stats()
	t.Logf("%d records, %d batches, %.1f records per fsync", stats.Records, stats.Batches, float64(stats.Records)/float64(stats.Syncs))
}

// Close while the appender is blocked on a full batch and waiters are
// queued: everything appended is flushed and acknowledged; nothing hangs.
func TestCloseWhileBusy(t *testing.T) {
	for trial := 0; trial < 20; trial++ {
		l := openLog(t, t.TempDir(), Options{Fsync: FsyncNeverBenchmarkOnly, MaxBatchRecords: 8})
		var appended atomic.Uint64
		done := make(chan struct{})
		results := make(chan error, 10000)
		go func() {
			defer close(done)
			for i := 0; i < 10000; i++ {
				index, err := l.Append(1, []byte("x"))
				if err != nil {
					return
				}
				appended.Store(index)
				l.Await(index, WaiterFunc(func(err error) { results <- err }))
			}
		}()
		time.Sleep(time.Duration(trial) * 100 * time.Microsecond)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		<-done
		if l.DurableIndex() != appended.Load() {
			t.Fatalf("closed with DurableIndex %d, %d appended", l.DurableIndex(), appended.Load())
		}
		close(results)
		for err := range results {
			if err != nil && !isClosed(err) {
				t.Fatal(err)
			}
		}
	}
}

func isClosed(err error) bool { return err == ErrClosed }
