package wal

import (
	"fmt"
	"log/slog"
	"time"
)

// FsyncMode says when the flusher fsyncs.
type FsyncMode int

const (
	// FsyncAlways fsyncs every batch (and the directory after a segment file
	// is created) before any of its waiters is released. The default.
	FsyncAlways FsyncMode = iota
	// FsyncNeverBenchmarkOnly never fsyncs: DurableIndex then means "handed
	// to the operating system". For benchmarks only, never for real data.
	FsyncNeverBenchmarkOnly
)

func (m FsyncMode) String() string {
	switch m {
	case FsyncAlways:
		return "FsyncAlways"
	case FsyncNeverBenchmarkOnly:
		return "FsyncNeverBenchmarkOnly"
	}
	return fmt.Sprintf("FsyncMode(%d)", int(m))
}

// Defaults that Open puts in place of zero Options fields.
const (
	DefaultSegmentSize     = 20 << 20 // bytes; tidwall/wal's default
	DefaultMaxBatchRecords = 8192     // records per WriteBatch+fsync
	DefaultMaxBatchBytes   = 4 << 20  // frame bytes per WriteBatch+fsync
	DefaultMaxWaiters      = 65536    // registered, unreleased waiters
)

// Options configures Open. The zero value is ready to use; zero fields get
// the defaults above and negative ones are rejected with ErrInvalidOptions.
type Options struct {
	// Fsync is when to fsync; the zero value is FsyncAlways.
	Fsync FsyncMode
	// SegmentSize is the target size of a segment file in bytes (default
	// 20 MiB). tidwall/wal keeps the whole tail segment in memory, so with
	// many logs in one process a smaller size saves memory.
	SegmentSize int
	// MaxBatchRecords bounds the records in one batch, that is in one
	// WriteBatch and one fsync (default 8192). Append blocks while the
	// pending batch is full and the flusher is busy with the previous one.
	MaxBatchRecords int
	// MaxBatchBytes bounds the frame bytes in one batch (default 4 MiB). A
	// single frame larger than it still makes a batch of its own.
	MaxBatchBytes int
	// MaxWaiters bounds the waiters registered and not yet released (default
	// 65536). Await blocks while the queue is full.
	MaxWaiters int
	// Logger receives the torn-tail repair warning and failure reports; nil
	// means slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told about every committed batch (for metrics).
	Observer Observer
	// Stepped starts no goroutine: the caller drives group commit with
	// Flush, which writes and fsyncs the pending batch and releases the due
	// waiters on the calling goroutine; Append and Await flush themselves
	// when their bound is reached instead of blocking. For a driver that
	// owns the only goroutine (the simulator, package sim). The commit rule
	// is the same code in both modes (Log.flushLocked).
	Stepped bool
	// Shipper, when set, is handed each batch before it is written.
	Shipper Shipper
	// Replicated makes the commit index wait for the replication layer:
	// a record is committed, and its waiters released, only once it is
	// durable here and Confirm covered it (the standbys of the sync set
	// hold it). Records found at Open are not committed until confirmed.
	Replicated bool
	// OpenStore opens the Store in dir (which exists and whose tail segment
	// has been repaired); nil means OpenTidwallStore. Tests inject faults here.
	OpenStore func(dir string, o StoreOptions) (Store, error)
	// Clock times the waiters (Log.Waits); nil means the monotonic clock
	// (time.Since the Log's opening: about half of time.Now and a Sub, and
	// every waiter is stamped twice). The simulator passes its simulated
	// clock.
	Clock func() time.Time
}

// withDefaults validates o and fills in its zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.Fsync != FsyncAlways && o.Fsync != FsyncNeverBenchmarkOnly {
		return o, fmt.Errorf("%w: Fsync %v", ErrInvalidOptions, o.Fsync)
	}
	limits := []struct {
		name  string
		value *int
		def   int
	}{
		{"SegmentSize", &o.SegmentSize, DefaultSegmentSize},
		{"MaxBatchRecords", &o.MaxBatchRecords, DefaultMaxBatchRecords},
		{"MaxBatchBytes", &o.MaxBatchBytes, DefaultMaxBatchBytes},
		{"MaxWaiters", &o.MaxWaiters, DefaultMaxWaiters},
	}
	for _, limit := range limits {
		if *limit.value < 0 {
			return o, fmt.Errorf("%w: %s %d", ErrInvalidOptions, limit.name, *limit.value)
		}
		if *limit.value == 0 {
			*limit.value = limit.def
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.OpenStore == nil {
		o.OpenStore = OpenTidwallStore
	}
	return o, nil
}

// Shipper is handed each batch the flusher is about to write, before its
// write and fsync here, so a replication layer can send it to the standbys
// while the disk works (group commit across machines). It is called on the
// flusher goroutine, in index order, and must not block or keep b (copy
// the frames). A batch shipped may still fail here: the log then fails,
// and its records were never committed.
type Shipper interface {
	Ship(b *Batch)
}

// DurableShipper is a Shipper also told, once each batch it was handed
// is durable here (written, fsynced, and its folder synced when it made a
// segment), the batch's last index: on the flusher goroutine (in
// Options.Stepped mode, the caller's that flushed), outside the log's
// lock, so it may call the log. It must not block. A replication layer
// learns from it when its log's commit index may rise (CommitIndex is
// min(DurableIndex, what Confirm covered)).
type DurableShipper interface {
	Shipper
	Durable(index uint64)
}

// Observer is told about each batch the flusher commits: how many records
// it held and how long its fsync took (zero without fsync). It is called
// on the flusher goroutine and must not block.
type Observer interface {
	Committed(records int, fsync time.Duration)
}
