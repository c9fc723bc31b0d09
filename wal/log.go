package wal

import (
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Log is one write-ahead log: a directory of tidwall/wal segments whose
// entries are frames, written by one flusher goroutine with group commit.
//
// Append and Await are meant for one goroutine (the owner, e.g. an actor);
// FirstIndex, LastIndex, DurableIndex, Err and Stats may be called from any
// goroutine; Replay and TruncateFront are serialised with each other.
type Log struct {
	dir    string
	opts   Options
	logger *slog.Logger
	store  Store

	firstIndex   atomic.Uint64 // store's first index: oldest record, or LastIndex+1 when none
	lastIndex    atomic.Uint64 // last index given out by Append
	durableIndex atomic.Uint64 // last index written and fsynced
	// commitBound is the highest index the replication layer confirmed
	// (Confirm); math.MaxUint64 for a log that is not replicated.
	commitBound atomic.Uint64
	counters    counters

	// storeMu serialises Replay, TruncateFront and the final Store.Close:
	// tidwall's Read mutates its segment cache and is not safe concurrently.
	storeMu sync.Mutex

	mu          sync.Mutex
	pending     *Batch      // filled by Append; taken whole by the flusher
	waiters     waiterQueue // bounded by opts.MaxWaiters
	releasing   bool        // the releaser is calling waiters outside mu
	failure     error       // sticky, wraps ErrFailed
	closing     bool        // Close called: no more Append
	closed      bool        // flusher gone: Await answers ErrClosed
	flusherIdle bool        // the flusher waits on workReady
	workReady   sync.Cond   // flusher waits: pending empty
	batchSpace  sync.Cond   // Append waits: pending full
	waiterSpace sync.Cond   // Await waits: waiters full
	releaseWork sync.Cond   // releaser waits: nothing due
	flusherDone chan struct{}
	// releaserDone is closed when the releaser has released every waiter
	// the flusher made due and stopped (after the flusher).
	releaserDone chan struct{}

	spare *Batch // the buffer not being filled; nil while flushLocked writes it
	// releaseBuffer is the scratch space of releaseLocked when it runs on
	// the caller's goroutine (Options.Stepped).
	releaseBuffer []waiter

	closeOnce sync.Once
	closeErr  error

	// advanced is closed when DurableIndex next moves (DurableAfter);
	// nil while nobody waits. Guarded by mu.
	advanced chan struct{}
	hints    readHints // where ReadDurable's reads ended

	waits waitFigures // Waits (waits.go)
}

// counters are the Stats figures, updated by the flusher.
type counters struct {
	batches, records, bytes, syncs, dirSyncs, segments atomic.Uint64
	syncNanos                                          atomic.Int64
}

// Stats are cumulative figures since Open, for metrics and benchmarks.
type Stats struct {
	Batches         uint64        // Store.WriteBatch calls that succeeded
	Records         uint64        // records in those batches
	Bytes           uint64        // frame bytes in those batches
	Syncs           uint64        // Store.Sync calls that succeeded (file fsyncs)
	DirSyncs        uint64        // directory fsyncs, Open and TruncateFront included
	SegmentsCreated uint64        // segment files created by WriteBatch
	SyncTime        time.Duration // time spent in Store.Sync and SyncDir
}

// Open opens the log in dir, creating dir (and fsyncing its parent) if
// needed. Before the Store opens it, it validates every frame of the tail
// segment: a torn tail (cut entry, zero bytes, garbage with no valid frame
// after it) is cut off, fsynced and reported to Options.Logger with the
// number of bytes dropped; damage followed by a valid frame returns an error
// wrapping ErrCorrupt that names the file, offset and index. With
// FsyncAlways it then fsyncs the tail segment and the directory, so that
// every record present is durable: DurableIndex() == LastIndex() on return.
// Open never panics; on error nothing is left open.
func Open(dir string, opts Options) (l *Log, err error) {
	defer func() {
		if r := recover(); r != nil {
			l, err = nil, fmt.Errorf("wal: open %s: %w: panic: %v", dir, ErrCorrupt, r)
		}
	}()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	syncFiles := o.Fsync == FsyncAlways
	if err := CreateDir(dir, syncFiles); err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	if err := repairTail(dir, o.Logger, syncFiles); err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	store, err := o.OpenStore(dir, StoreOptions{SegmentSize: o.SegmentSize})
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	l = newLog(dir, o, store)
	if err := l.load(syncFiles); err != nil {
		store.Close()
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	l.start()
	return l, nil
}

// start runs the flusher and the releaser, unless the caller drives the
// Log (Options.Stepped).
func (l *Log) start() {
	if l.opts.Stepped {
		return
	}
	go l.runFlusher()
	go l.runReleaser()
}

func newLog(dir string, o Options, store Store) *Log {
	l := &Log{
		dir:         dir,
		opts:        o,
		logger:      o.Logger,
		store:       store,
		pending:     new(Batch),
		spare:       new(Batch),
		waiters:     waiterQueue{max: o.MaxWaiters},
		flusherDone: make(chan struct{}),

		releaserDone: make(chan struct{}),
	}
	if !o.Replicated {
		l.commitBound.Store(math.MaxUint64)
	}
	if o.Clock != nil {
		l.waits.epoch = o.Clock()
	} else {
		l.waits.epoch = time.Now()
	}
	l.workReady.L = &l.mu
	l.batchSpace.L = &l.mu
	l.waiterSpace.L = &l.mu
	l.releaseWork.L = &l.mu
	return l
}

// load reads the indexes from the store and makes what it holds durable.
func (l *Log) load(syncFiles bool) error {
	first, err := l.store.FirstIndex()
	if err != nil {
		return err
	}
	last, err := l.store.LastIndex()
	if err != nil {
		return err
	}
	if syncFiles {
		// Records left in the page cache by a crashed process are not yet
		// durable: nothing may be decided on them before this.
		if err := l.store.Sync(); err != nil {
			// The page cache may now show records the disk lost: the
			// caller must not open this log again in place (ErrSyncFailed).
			return fmt.Errorf("%w: of the records found at open: %w", ErrSyncFailed, err)
		}
		if err := l.store.SyncDir(); err != nil {
			return fmt.Errorf("%w: fsync directory at open: %w", ErrSyncFailed, err)
		}
		l.counters.dirSyncs.Add(1)
	}
	l.firstIndex.Store(first)
	l.lastIndex.Store(last)
	l.durableIndex.Store(last)
	return nil
}

// Dir returns the directory the log was opened in.
func (l *Log) Dir() string { return l.dir }

// FirstIndex returns the index of the oldest record the log holds, or 0 when
// it holds none (a new log, or one truncated past its last record). It is 1
// until TruncateFront(i) moves it to i.
func (l *Log) FirstIndex() uint64 {
	first := l.firstIndex.Load()
	if first > l.lastIndex.Load() {
		return 0
	}
	return first
}

// LastIndex returns the index of the last record appended, durable or not;
// 0 for a log that never held a record.
func (l *Log) LastIndex() uint64 { return l.lastIndex.Load() }

// DurableIndex returns the index of the last record known to be written and
// fsynced (written only, in FsyncNeverBenchmarkOnly). It never decreases and
// stops moving after a failure.
func (l *Log) DurableIndex() uint64 { return l.durableIndex.Load() }

// CommitIndex returns the index of the last committed record: durable
// here and, on a log opened with Options.Replicated, confirmed by the
// replication layer (Confirm) as held by every standby it must wait for.
// It is the one gate on what may leave the process: Await releases its
// waiters by it, and ReadDurable and DurableAfter read only up to it. On
// a log that is not replicated it is DurableIndex.
func (l *Log) CommitIndex() uint64 { return min(l.durableIndex.Load(), l.commitBound.Load()) }

// Confirm tells a replicated log (Options.Replicated) that its records
// through index are held by every standby it must wait for: the commit
// index may advance to min(index, DurableIndex()). A lower index than one
// confirmed before changes nothing (confirmations only rise). It releases
// the waiters that became due (on the caller's goroutine in Options.Stepped
// mode) and wakes DurableAfter. On a log that is not replicated it is a
// programming error.
func (l *Log) Confirm(index uint64) {
	if !l.opts.Replicated {
		panic("wal: Confirm on a log that is not replicated")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if index <= l.commitBound.Load() {
		return
	}
	l.commitBound.Store(index)
	l.notifyDurableLocked()
	if l.opts.Stepped {
		l.releaseBuffer = l.releaseLocked(l.releaseBuffer)
		return
	}
	l.releaseWork.Signal()
}

// Err returns the sticky failure (wrapping ErrFailed), ErrClosed after Close,
// or nil while the log is healthy.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errLocked()
}

func (l *Log) errLocked() error {
	if l.failure != nil {
		return l.failure
	}
	if l.closing {
		return ErrClosed
	}
	return nil
}

// Stats returns the figures counted since Open.
func (l *Log) Stats() Stats {
	c := &l.counters
	return Stats{
		Batches:         c.batches.Load(),
		Records:         c.records.Load(),
		Bytes:           c.bytes.Load(),
		Syncs:           c.syncs.Load(),
		DirSyncs:        c.dirSyncs.Load(),
		SegmentsCreated: c.segments.Load(),
		SyncTime:        time.Duration(c.syncNanos.Load()),
	}
}

// TruncateFront removes every record with an index below index, for a
// snapshot that covers them, and fsyncs the directory. index <= FirstIndex()
// is a no-op; index may be at most DurableIndex()+1 (ErrOutOfRange), and
// DurableIndex()+1 empties the log (FirstIndex() is then 0 until the next
// Append). A Store failure is sticky (ErrFailed): tidwall may be half-way
// through its file renames, which its next Open completes.
func (l *Log) TruncateFront(index uint64) error {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if err := l.Err(); err != nil {
		return err
	}
	if index <= l.firstIndex.Load() {
		return nil
	}
	if durable := l.durableIndex.Load(); index > durable+1 {
		return fmt.Errorf("%w: TruncateFront(%d) beyond DurableIndex %d + 1", ErrOutOfRange, index, durable)
	}
	if err := l.store.TruncateFront(index); err != nil {
		return l.fail(fmt.Errorf("%w: truncate front to %d: %w", ErrFailed, index, err))
	}
	l.firstIndex.Store(index)
	if l.opts.Fsync == FsyncAlways {
		if err := l.syncDir(); err != nil {
			return l.fail(fmt.Errorf("%w: %w: fsync directory after truncate front to %d: %w", ErrFailed, ErrSyncFailed, index, err))
		}
	}
	return nil
}

// syncDir fsyncs the directory through the Store and counts it.
func (l *Log) syncDir() error {
	start := time.Now()
	err := l.store.SyncDir()
	l.counters.syncNanos.Add(int64(time.Since(start)))
	if err == nil {
		l.counters.dirSyncs.Add(1)
	}
	return err
}

// fail records err as the sticky failure (the first one wins), wakes every
// goroutine that waits, and returns the sticky error. The flusher releases
// the waiters.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failLocked(err)
}

func (l *Log) failLocked(err error) error {
	if l.failure == nil {
		l.failure = err
		l.logger.Error("wal: log failed; it acknowledges nothing more until reopened", "dir", l.dir, "err", err)
	}
	l.workReady.Signal()
	l.batchSpace.Broadcast()
	l.waiterSpace.Broadcast()
	l.notifyDurableLocked()
	return l.failure
}

// Close flushes and fsyncs the pending records, releases every waiter
// (with nil for what became durable, else with the failure or ErrClosed),
// and closes the Store. It returns the sticky failure if the log failed.
// Append, Await, Replay and TruncateFront then answer ErrClosed (or the
// failure). Close is idempotent: later calls return the first result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Log) close() error {
	l.mu.Lock()
	l.closing = true
	l.notifyDurableLocked()
	l.workReady.Signal()
	l.batchSpace.Broadcast()
	l.waiterSpace.Broadcast()
	l.mu.Unlock()
	if l.opts.Stepped {
		l.drainStepped()
	} else {
		<-l.flusherDone
		<-l.releaserDone
	}

	l.mu.Lock()
	failure := l.failure
	leftover := l.waiters.popAll(nil)
	l.noteOldestLocked()
	l.waiterSpace.Broadcast()
	l.mu.Unlock()
	release(leftover, ErrClosed)

	l.storeMu.Lock()
	err := l.store.Close()
	l.storeMu.Unlock()
	if failure != nil {
		return failure
	}
	if err != nil {
		return fmt.Errorf("wal: close %s: %w", l.dir, err)
	}
	return nil
}

// drainStepped is Close's flush of a Stepped Log, on the caller's
// goroutine: what the flusher and releaser do before they stop.
func (l *Log) drainStepped() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.flushLocked() {
	}
	l.closed = true
	l.releaseBuffer = l.releaseLocked(l.releaseBuffer)
}

// release calls every waiter with err and clears the slice's entries.
func release(waiters []waiter, err error) {
	for i := range waiters {
		waiters[i].w.Durable(err)
		waiters[i] = waiter{}
	}
}
