package wal

import (
	"testing"
	"time"
)

// clockedStore is a store whose Sync takes took on a test clock.
type clockedStore struct {
	Store
	now  *time.Time
	took time.Duration
}

func (s *clockedStore) Sync() error {
	*s.now = s.now.Add(s.took)
	return s.Store.Sync()
}

// Waits tells how long waiters wait: the oldest still queued, and the
// oldest of the last release, as the clock the Log was given reads them.
func TestWaitsTimeTheWaiters(t *testing.T) {
	now := time.Unix(1000, 0)
	s := &clockedStore{Store: newMemStore(&eventLog{}), now: &now}
	l := openLog(t, t.TempDir(), Options{Stepped: true, Clock: func() time.Time { return now },
		OpenStore: func(string, StoreOptions) (Store, error) { return s, nil }})
	defer l.Close()
	if w := l.Waits(); w != (Waits{}) {
		t.Fatalf("a new log: %+v", w)
	}

	appendRecords(t, l, 1, 2)
	l.Await(1, WaiterFunc(func(error) {}))
	now = now.Add(30 * time.Millisecond)
	l.Await(2, WaiterFunc(func(error) {}))
	now = now.Add(20 * time.Millisecond)
	if w := l.Waits(); w.Oldest != 50*time.Millisecond || w.Last != 0 || w.Releases != 0 {
		t.Fatalf("two waiters queued 50 and 20 ms ago: %+v", w)
	}

	s.took = 400 * time.Millisecond // the fsync
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if w := l.Waits(); w.Oldest != 0 || w.Last != 450*time.Millisecond || w.Releases != 1 {
		t.Fatalf("after a commit of 400 ms: %+v, want oldest 0, last 450ms, 1 release", w)
	}

	// A quick commit with nothing queued in front: Last follows it.
	appendRecords(t, l, 3, 3)
	l.Await(3, WaiterFunc(func(error) {}))
	s.took = time.Millisecond
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if w := l.Waits(); w.Last != time.Millisecond || w.Releases != 2 {
		t.Fatalf("after a commit of 1 ms: %+v", w)
	}

	// A waiter for a record already durable is released at once: no wait.
	l.Await(3, WaiterFunc(func(error) {}))
	if w := l.Waits(); w.Oldest != 0 || w.Releases != 2 {
		t.Fatalf("an immediate release counted: %+v", w)
	}
}

// A failed log releases its waiters with the failure: that is no commit
// latency, and nothing stays queued.
func TestWaitsAfterFailure(t *testing.T) {
	now := time.Unix(1000, 0)
	l, s, _ := steppedLog(t, Options{Clock: func() time.Time { return now }})
	defer l.Close()
	appendRecords(t, l, 1, 1)
	l.Await(1, WaiterFunc(func(error) {}))
	s.failSyncAt = 1
	now = now.Add(time.Second)
	if err := l.Flush(); err == nil {
		t.Fatal("Flush after a failed fsync: nil")
	}
	if w := l.Waits(); w != (Waits{}) {
		t.Fatalf("after a failure: %+v", w)
	}
}
