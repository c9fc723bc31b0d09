package wal

// StoreOptions is what Open passes to Options.OpenStore.
type StoreOptions struct {
	// SegmentSize is the target size of a segment file in bytes (> 0).
	SegmentSize int
}

// Store is the storage under a Log: the small part of tidwall/wal that the
// flusher needs, as an interface so that tests can inject write and sync
// failures, latency, or writes that are reported done and then lost.
// OpenTidwallStore is the real one.
//
// Entries are opaque byte strings (one frame each) at consecutive indexes
// starting at 1. The Log calls WriteBatch, Sync and SyncDir from its flusher
// goroutine, and Read and TruncateFront from the goroutine that calls
// Replay or TruncateFront, possibly at the same time: implementations must
// be safe for that. After any error the Log calls nothing but Close.
type Store interface {
	// WriteBatch appends the frames of b at indexes b.FirstIndex()... (the
	// first must be LastIndex()+1), without fsync of what it appends. It
	// returns how many new segment files it created; their directory
	// entries are not durable until SyncDir. b is read-only and must not be
	// kept. A store that fsyncs a segment it closes on the way (tidwall
	// does, before it creates the next) returns an error wrapping
	// ErrSyncFailed when that fsync fails.
	WriteBatch(b *Batch) (segmentsCreated int, err error)
	// Sync makes every entry written so far durable (fsync of the segment
	// file being appended; older segments are synced when they fill).
	Sync() error
	// SyncDir makes the directory entries (segment files created, renamed or
	// removed) durable: fsync of the directory.
	SyncDir() error
	// FirstIndex returns the index of the oldest entry, or LastIndex()+1 when
	// the store holds none (1 for a new store).
	FirstIndex() (uint64, error)
	// LastIndex returns the index of the newest entry written, 0 for a new store.
	LastIndex() (uint64, error)
	// Read returns the entry at index, FirstIndex() <= index <= LastIndex().
	// The slice may alias the store's memory: the caller does not modify it
	// and does not use it after its next call into the Store.
	Read(index uint64) ([]byte, error)
	// TruncateFront removes every entry with an index below index
	// (FirstIndex() < index <= LastIndex()+1), durably once SyncDir returns.
	TruncateFront(index uint64) error
	// Close releases the store; it fsyncs what was written.
	Close() error
}
