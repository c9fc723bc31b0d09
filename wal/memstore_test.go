package wal

import (
	"fmt"
	"sync"
)

// memStore is the in-memory Store twin: entries in a slice, every call
// recorded in events when set.
type memStore struct {
	mu         sync.Mutex
	firstIndex uint64
	entries    [][]byte
	events     *eventLog
}

func newMemStore(events *eventLog) *memStore { return &memStore{firstIndex: 1, events: events} }

func (s *memStore) WriteBatch(b *Batch) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if want := s.firstIndex + uint64(len(s.entries)); b.FirstIndex() != want {
		return 0, fmt.Errorf("memStore: batch starts at %d, want %d", b.FirstIndex(), want)
	}
	for i := 0; i < b.Len(); i++ {
		s.entries = append(s.entries, append([]byte(nil), b.Frame(i)...))
	}
	s.events.add(event{kind: "write", first: b.FirstIndex(), last: b.LastIndex()})
	return 0, nil
}

func (s *memStore) Sync() error {
	s.events.add(event{kind: "sync"})
	return nil
}

func (s *memStore) SyncDir() error {
	s.events.add(event{kind: "syncdir"})
	return nil
}

func (s *memStore) FirstIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstIndex, nil
}

func (s *memStore) LastIndex() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstIndex + uint64(len(s.entries)) - 1, nil
}

func (s *memStore) Read(index uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index < s.firstIndex || index >= s.firstIndex+uint64(len(s.entries)) {
		return nil, fmt.Errorf("memStore: no index %d", index)
	}
	return s.entries[index-s.firstIndex], nil
}

func (s *memStore) TruncateFront(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = s.entries[index-s.firstIndex:]
	s.firstIndex = index
	return nil
}

func (s *memStore) Close() error { return nil }

// event is one Store call or waiter release, in the order they happened.
type event struct {
	kind        string // write, sync, syncdir, release
	created     int    // write: segment files created
	first, last uint64 // write: the batch; release: the awaited index (last)
	err         error  // release
}

// eventLog is safe for concurrent use; a nil *eventLog records nothing.
type eventLog struct {
	mu     sync.Mutex
	events []event
}

func (e *eventLog) add(ev event) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *eventLog) snapshot() []event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]event(nil), e.events...)
}

// recordingWaiter adds a release event for its index.
type recordingWaiter struct {
	index  uint64
	events *eventLog
	done   chan<- struct{}
}

func (w *recordingWaiter) Durable(err error) {
	w.events.add(event{kind: "release", last: w.index, err: err})
	if w.done != nil {
		w.done <- struct{}{}
	}
}

// gatedStore blocks every WriteBatch until gate is closed or yields a value.
type gatedStore struct {
	Store
	gate chan struct{}
}

func (s *gatedStore) open(string, StoreOptions) (Store, error) { return s, nil }

func (s *gatedStore) WriteBatch(b *Batch) (int, error) {
	<-s.gate
	return s.Store.WriteBatch(b)
}
