package wal

import (
	"fmt"
	"time"
)

// Append frames one record (copying payload) into the pending batch and
// returns its index, LastIndex()+1. It never waits for the disk: it blocks
// only while the pending batch is full (Options.MaxBatchRecords or
// MaxBatchBytes) and the flusher is still writing the previous one (in
// Options.Stepped mode it flushes the full batch itself instead). The
// record is durable once DurableIndex() reaches the index; use Await to be
// told. typ must be non-zero (ErrInvalidType) and len(payload) at most
// MaxPayloadSize (ErrFrameTooLarge). After a failure it returns the sticky
// error (wrapping ErrFailed), after Close ErrClosed. Call it from one
// goroutine; it is safe against the flusher.
func (l *Log) Append(typ byte, payload []byte) (uint64, error) {
	return l.append(typ, payload, 0)
}

// AppendCopy appends a record framed by another log, a standby copying its
// primary's, at the index the frame names: it must be LastIndex()+1
// (ErrOutOfRange otherwise; nothing is appended). The frame is validated
// first (ErrCorrupt). The record is framed again here exactly as its
// primary framed it, so both logs hold the same bytes at the same index.
// Otherwise as Append.
func (l *Log) AppendCopy(frame []byte) (uint64, error) {
	typ, index, payload, err := DecodeFrame(frame)
	if err != nil {
		return 0, err
	}
	if index == 0 {
		return 0, fmt.Errorf("%w: a frame of index 0", ErrCorrupt)
	}
	return l.append(typ, payload, index)
}

// append is Append; want, when not 0, is the index the record must get.
func (l *Log) append(typ byte, payload []byte, want uint64) (uint64, error) {
	if typ == 0 {
		return 0, ErrInvalidType
	}
	if len(payload) > MaxPayloadSize {
		return 0, fmt.Errorf("%w: payload of %d bytes, at most %d", ErrFrameTooLarge, len(payload), MaxPayloadSize)
	}
	size := FrameOverhead + len(payload)
	l.mu.Lock()
	for {
		if err := l.errLocked(); err != nil {
			l.mu.Unlock()
			return 0, err
		}
		if l.hasRoomLocked(size) {
			break
		}
		if l.opts.Stepped {
			l.flushLocked() // no flusher to wait for: the caller's goroutine writes
			continue
		}
		l.batchSpace.Wait()
	}
	index := l.lastIndex.Load() + 1
	if want != 0 && want != index {
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: a copy of record %d, the log's next is %d", ErrOutOfRange, want, index)
	}
	l.pending.add(typ, index, payload)
	l.lastIndex.Store(index)
	if l.flusherIdle {
		l.flusherIdle = false
		l.workReady.Signal()
	}
	l.mu.Unlock()
	return index, nil
}

// hasRoomLocked reports whether a frame of size bytes fits the pending batch.
// An empty batch takes any frame.
func (l *Log) hasRoomLocked(size int) bool {
	b := l.pending
	return b.Len() == 0 || (b.Len() < l.opts.MaxBatchRecords && b.Size()+size <= l.opts.MaxBatchBytes)
}

// Await registers w to be released once every record with an index <= index
// is durable. If that is already so (and no earlier waiter is still being
// released) it calls w.Durable(nil) at once, in the caller's goroutine.
// Waiters are released in registration order: an index lower than that of
// a waiter already queued is raised to it (released later, never earlier).
// After a failure or Close, w is called at once with the error. Await blocks
// while Options.MaxWaiters waiters are queued (in Options.Stepped mode it
// flushes and releases them itself instead). index must be at most
// LastIndex(): a waiter for a record not yet appended is a programming error
// and panics.
func (l *Log) Await(index uint64, w Waiter) {
	at := l.stamp()
	l.mu.Lock()
	for {
		if err := l.awaitErrLocked(); err != nil {
			l.mu.Unlock()
			w.Durable(err)
			return
		}
		if last := l.lastIndex.Load(); index > last {
			l.mu.Unlock()
			panic(fmt.Sprintf("wal: Await(%d) beyond LastIndex %d", index, last))
		}
		if index <= l.CommitIndex() && l.waiters.empty() && !l.releasing {
			l.mu.Unlock()
			w.Durable(nil)
			return
		}
		if !l.waiters.full() {
			break
		}
		if l.opts.Stepped {
			// No releaser to wait for: make every waiter due and release them.
			l.flushLocked()
			l.releaseBuffer = l.releaseLocked(l.releaseBuffer)
			continue
		}
		l.waiterSpace.Wait()
	}
	if !l.waiters.empty() {
		index = max(index, l.waiters.lastIndex())
	}
	l.waiters.push(waiter{index: index, w: w, at: at})
	if l.waiters.count == 1 {
		l.noteOldestLocked()
	}
	l.mu.Unlock()
}

// awaitErrLocked is the error a new waiter gets at once: the failure, or
// ErrClosed once the flusher is gone. While Close drains, waiters still queue.
func (l *Log) awaitErrLocked() error {
	if l.failure != nil {
		return l.failure
	}
	if l.closed {
		return ErrClosed
	}
	return nil
}

// runFlusher is the flusher goroutine: a loop over flushLocked, so the next
// batch forms (Append fills the other buffer) while this one is written.
// The waiters a batch covers go to the releaser when another batch waits
// to be written (or a release is under way), so the next batch is written
// while the replies of this one are released; otherwise the flusher
// releases them itself: there is no write for the release to overlap, and
// handing it over would cost a goroutine wake-up per batch (one request at
// a time, fsync off: about 1,000 of a reserve's 34,800 instructions,
// callgrind, httpapi's BenchmarkPathHotReserve). It stops after Close once
// nothing is pending, or after a failure.
func (l *Log) runFlusher() {
	defer close(l.flusherDone)
	var buffer []waiter
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for l.pending.Len() == 0 && !l.closing && l.failure == nil {
			l.flusherIdle = true
			l.workReady.Wait()
		}
		l.flusherIdle = false
		if !l.flushLocked() {
			break
		}
		if l.pending.Len() == 0 && !l.releasing {
			buffer = l.releaseLocked(buffer)
			continue
		}
		l.releaseWork.Signal()
	}
	l.closed = true
	l.waiterSpace.Broadcast()
	l.releaseWork.Signal()
}

// flushLocked is group commit's one step, the only place that advances
// DurableIndex: it takes the whole pending batch, writes and fsyncs it
// (commit, with mu released), then advances DurableIndex to its last
// index, or records the failure. It returns false when nothing was pending
// or the log has failed. Called with mu held, by the flusher goroutine or,
// in Options.Stepped mode, by Flush, Append, Await and Close on the
// caller's goroutine. It does not release waiters (releaseLocked does).
func (l *Log) flushLocked() bool {
	if l.failure != nil || l.pending.Len() == 0 {
		return false
	}
	batch := l.spare
	batch, l.pending = l.pending, batch
	l.spare = nil // the flusher owns it until reset
	l.batchSpace.Broadcast()
	l.mu.Unlock()
	err := l.commit(batch)
	l.mu.Lock()
	if err != nil {
		l.failLocked(err)
	} else {
		committed := l.CommitIndex()
		l.durableIndex.Store(batch.LastIndex())
		if l.CommitIndex() > committed { // a replicated log's may wait for Confirm
			l.notifyDurableLocked()
		}
	}
	last := batch.LastIndex()
	batch.reset()
	l.spare = batch
	if d, ok := l.opts.Shipper.(DurableShipper); ok && err == nil {
		l.mu.Unlock()
		d.Durable(last)
		l.mu.Lock()
	}
	return err == nil
}

// Flush is group commit on the caller's goroutine, for a Log opened with
// Options.Stepped: it writes and fsyncs the pending batch (if any), then
// calls, in order, every waiter that became due, before it returns. It
// returns the sticky failure (wrapping ErrFailed), ErrClosed after Close,
// or nil; ErrNotStepped on a Log that runs its own flusher.
func (l *Log) Flush() error {
	if !l.opts.Stepped {
		return ErrNotStepped
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.releaseBuffer = l.releaseLocked(l.releaseBuffer)
	return l.errLocked()
}

// runReleaser is the releaser goroutine: it calls, in order, the waiters
// the flusher made due (or all of them with the failure). It stops once the
// flusher has stopped and nothing due is left.
func (l *Log) runReleaser() {
	defer close(l.releaserDone)
	var buffer []waiter
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if !l.releasing { // else the flusher releases, and goes on until none is due
			buffer = l.releaseLocked(buffer)
		}
		if l.closed {
			return
		}
		l.releaseWork.Wait()
	}
}

// commit writes one batch and makes it durable. Errors wrap ErrFailed.
func (l *Log) commit(b *Batch) error {
	if l.opts.Shipper != nil {
		l.opts.Shipper.Ship(b) // on its way to the standbys while it is written here
	}
	segmentsCreated, err := l.store.WriteBatch(b)
	if err != nil {
		return fmt.Errorf("%w: write records %d..%d: %w", ErrFailed, b.FirstIndex(), b.LastIndex(), err)
	}
	c := &l.counters
	c.batches.Add(1)
	c.records.Add(uint64(b.Len()))
	c.bytes.Add(uint64(b.Size()))
	c.segments.Add(uint64(segmentsCreated))
	if l.opts.Fsync == FsyncNeverBenchmarkOnly {
		if l.opts.Observer != nil {
			l.opts.Observer.Committed(b.Len(), 0)
		}
		return nil
	}
	if mutantAckBeforeFsync {
		return nil
	}
	start := time.Now()
	err = l.store.Sync()
	if err != nil && mutantRetryFsync {
		err = l.store.Sync()
	}
	took := time.Since(start)
	c.syncNanos.Add(int64(took))
	if err != nil {
		return fmt.Errorf("%w: %w: records %d..%d: %w", ErrFailed, ErrSyncFailed, b.FirstIndex(), b.LastIndex(), err)
	}
	c.syncs.Add(1)
	if l.opts.Observer != nil {
		l.opts.Observer.Committed(b.Len(), took)
	}
	if segmentsCreated > 0 {
		if err := l.syncDir(); err != nil {
			return fmt.Errorf("%w: %w: fsync directory after creating %d segment(s): %w", ErrFailed, ErrSyncFailed, segmentsCreated, err)
		}
	}
	return nil
}

// releaseLocked calls, outside mu and in order, every waiter that is due:
// those covered by CommitIndex with nil, or all of them with the failure.
// It loops until none is due, so that a waiter queued meanwhile is not
// overtaken by one that Await would answer at once. buffer is reused scratch
// space, at most MaxWaiters long.
func (l *Log) releaseLocked(buffer []waiter) []waiter {
	for {
		// What became durable before a failure is released as durable;
		// the rest gets the failure.
		var err error
		buffer = l.waiters.popThrough(l.CommitIndex(), buffer[:0])
		if len(buffer) > 0 {
			l.noteReleased(buffer, l.stamp())
		} else if l.failure != nil {
			err = l.failure
			buffer = l.waiters.popAll(buffer[:0])
		}
		l.noteOldestLocked()
		if len(buffer) == 0 {
			l.releasing = false
			return buffer
		}
		l.releasing = true
		l.waiterSpace.Broadcast()
		l.mu.Unlock()
		release(buffer, err)
		l.mu.Lock()
	}
}
