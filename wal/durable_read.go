package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrCompacted is wrapped by ReadDurable's *CompactedError for a record
// below the first one kept: a snapshot covers it and TruncateFront removed it.
var ErrCompacted = errors.New("wal: record compacted")

// CompactedError says which record was asked for and which is the first
// the log keeps (FirstIndex() may lag behind the files for a moment during
// a truncation: First is what the reader found).
type CompactedError struct {
	Index, First uint64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%v: record %d, the log starts at %d", ErrCompacted, e.Index, e.First)
}

// Is makes errors.Is(err, ErrCompacted) hold.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// readHintCount is the number of read positions a Log remembers, so that
// readers following the tail (a feed's long polls) continue where the last
// read of a segment ended instead of scanning it from its start.
const readHintCount = 16

// readBufferSize is the size of the buffered reader over a segment file.
const readBufferSize = 64 << 10

// readers are the buffered readers of ReadDurable, reused between reads.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// ReadDurable calls fn, in index order and from the calling goroutine, for
// at most maxRecords committed records from index from on (from 0 means
// 1): those from through min(from+maxRecords-1, CommitIndex()) as of the
// call. It returns the index after the last record passed to fn (from when
// there was none). It never passes a record that is not committed.
//
// Unlike Replay it is meant for readers beside a running log (an event
// feed): with the tidwall store it reads the segment files itself, through
// its own descriptors, and takes none of the locks the flusher or the
// log's owner use, so a slow reader delays neither; a segment removed by a
// truncation while it is read stays readable through the open descriptor.
// Each read remembers where it ended (readHintCount positions per Log), so
// a reader that follows the tail reads only the new bytes. With a Store
// that keeps no segment files (an in-memory twin) it reads through the
// Store under the lock Replay takes, one call at a time.
//
// payload aliases a buffer reused for the next record: fn must copy what it
// keeps. Every frame is validated (magic, version, type, CRC-32C, its
// index); a failure wraps ErrCorrupt. Errors: ErrCompacted when from is
// below FirstIndex(); the sticky failure or ErrClosed; an error from fn is
// returned as is.
func (l *Log) ReadDurable(from uint64, maxRecords int, fn func(index uint64, typ byte, payload []byte) error) (next uint64, err error) {
	return l.readThrough(l.CommitIndex, from, maxRecords, fn)
}

// ReadLocal is ReadDurable through DurableIndex instead of CommitIndex:
// records durable here, committed or not. It serves the replication layer
// alone, which ships them to the standbys whose acknowledgements commit
// them (a standby catching up from this log's files); nothing it reads
// may leave the process otherwise.
func (l *Log) ReadLocal(from uint64, maxRecords int, fn func(index uint64, typ byte, payload []byte) error) (next uint64, err error) {
	return l.readThrough(l.DurableIndex, from, maxRecords, fn)
}

// readThrough is ReadDurable and ReadLocal: it reads up to bound().
func (l *Log) readThrough(bound func() uint64, from uint64, maxRecords int, fn func(index uint64, typ byte, payload []byte) error) (next uint64, err error) {
	from = max(from, 1)
	if err := l.Err(); err != nil {
		return from, err
	}
	if first := l.firstIndex.Load(); from < first {
		return from, &CompactedError{Index: from, First: first}
	}
	last := bound()
	if maxRecords <= 0 || from > last {
		return from, nil
	}
	last = min(last, from+uint64(maxRecords)-1)
	if _, ok := l.store.(SegmentedStore); !ok {
		return l.readStore(from, last, fn)
	}
	for attempt := 0; ; attempt++ {
		next, err = l.readFiles(from, last, fn)
		if !errors.Is(err, os.ErrNotExist) || attempt == readAttempts {
			break
		}
		// A truncation removed the segment between the listing and the
		// open: list again, or report the records gone.
		if first := l.firstIndex.Load(); next < first {
			return next, &CompactedError{Index: next, First: first}
		}
		from = next
	}
	return next, err
}

// readStore reads from..last through the Store, under storeMu.
func (l *Log) readStore(from, last uint64, fn func(index uint64, typ byte, payload []byte) error) (uint64, error) {
	type record struct {
		typ     byte
		payload []byte
	}
	records := make([]record, 0, last-from+1)
	l.storeMu.Lock()
	for index := from; index <= last; index++ {
		frame, err := l.store.Read(index)
		if err != nil {
			l.storeMu.Unlock()
			return from, fmt.Errorf("wal: read record %d: %w", index, err)
		}
		typ, payload, err := checkFrameAt(frame, index)
		if err != nil {
			l.storeMu.Unlock()
			return from, err
		}
		records = append(records, record{typ: typ, payload: append([]byte(nil), payload...)})
	}
	l.storeMu.Unlock()
	for i, r := range records {
		if err := fn(from+uint64(i), r.typ, r.payload); err != nil {
			return from + uint64(i), err
		}
	}
	return last + 1, nil
}

// readFiles reads from..last from the segment files. An error wrapping
// os.ErrNotExist means a segment disappeared: the caller lists them again
// and continues from the index returned.
func (l *Log) readFiles(from, last uint64, fn func(index uint64, typ byte, payload []byte) error) (uint64, error) {
	segs, err := Segments(l.dir)
	if err != nil {
		return from, err
	}
	if len(segs) == 0 {
		return from, fmt.Errorf("%w: no segment file in %s", ErrCorrupt, l.dir)
	}
	i := len(segs) - 1
	for i >= 0 && segs[i].FirstIndex > from {
		i--
	}
	if i < 0 {
		// The first segment starts after from: truncated, whether or not
		// TruncateFront has stored the new first index yet.
		return from, &CompactedError{Index: from, First: max(segs[0].FirstIndex, l.firstIndex.Load())}
	}
	index := from
	var frame []byte
	for ; i < len(segs) && index <= last; i++ {
		end := last
		if i+1 < len(segs) {
			end = min(end, segs[i+1].FirstIndex-1)
		}
		index, frame, err = l.readSegment(segs[i], index, end, frame, fn)
		if err != nil {
			return index, err
		}
	}
	if index <= last {
		return index, fmt.Errorf("%w: the segment files end before durable record %d", ErrCorrupt, index)
	}
	return index, nil
}

// readSegment passes the records from..end of one segment file to fn,
// starting from the best remembered position, and remembers where it
// stopped. buf is scratch space, returned for reuse.
func (l *Log) readSegment(seg Segment, from, end uint64, buf []byte, fn func(index uint64, typ byte, payload []byte) error) (uint64, []byte, error) {
	f, err := os.Open(seg.Path)
	if err != nil {
		return from, buf, err
	}
	defer f.Close()
	index, offset := l.hints.find(seg.FirstIndex, from)
	r := readers.Get().(*bufio.Reader)
	defer readers.Put(r)
	r.Reset(io.NewSectionReader(f, offset, 1<<62))
	for ; index <= end; index++ {
		size, err := binary.ReadUvarint(r)
		if err == nil && (size == 0 || size > MaxFrameSize) {
			err = fmt.Errorf("entry length %d", size)
		}
		if err == nil {
			buf = growTo(buf, int(size))
			_, err = io.ReadFull(r, buf)
		}
		if err != nil {
			return index, buf, fmt.Errorf("%w: %s: durable record %d at offset %d: %v", ErrCorrupt, seg.Path, index, offset, err)
		}
		offset += int64(uvarintSize(size)) + int64(size)
		if index < from {
			continue
		}
		typ, payload, err := checkFrameAt(buf, index)
		if err != nil {
			return index, buf, fmt.Errorf("%s: %w", seg.Path, err)
		}
		if err := fn(index, typ, payload); err != nil {
			return index, buf, err
		}
	}
	l.hints.remember(readHint{segment: seg.FirstIndex, index: index, offset: offset})
	return index, buf, nil
}

// checkFrameAt decodes a frame that must hold index.
func checkFrameAt(frame []byte, index uint64) (byte, []byte, error) {
	typ, frameIndex, payload, err := DecodeFrame(frame)
	if err != nil {
		return 0, nil, fmt.Errorf("wal: record %d: %w", index, err)
	}
	if frameIndex != index {
		return 0, nil, fmt.Errorf("%w: record %d holds the frame of index %d", ErrCorrupt, index, frameIndex)
	}
	return typ, payload, nil
}

// growTo returns buf resliced to n bytes, reallocated if too small.
func growTo(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, n)
	}
	return buf[:n]
}

// readHint is a position in a segment file: the entry of index starts at
// byte offset of the segment whose first index is segment.
type readHint struct {
	segment, index uint64
	offset         int64
}

// readHints is a small ring of the positions where reads ended.
type readHints struct {
	mu   sync.Mutex
	ring [readHintCount]readHint
	next int
}

// find returns the remembered position in segment closest to at or before
// index, or the segment's start.
func (h *readHints) find(segment, index uint64) (uint64, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	best := readHint{segment: segment, index: segment}
	for _, c := range h.ring {
		if c.segment == segment && c.index <= index && c.index > best.index {
			best = c
		}
	}
	return best.index, best.offset
}

func (h *readHints) remember(p readHint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.ring {
		if c == p {
			return
		}
	}
	h.ring[h.next] = p
	h.next = (h.next + 1) % readHintCount
}

// DurableAfter returns a channel that is closed once CommitIndex() is
// above index (at once if it already is), or the log fails or closes: a
// long poll waits on it instead of polling. Every caller waiting for the
// same batch shares one channel; the flusher closes it once per batch.
func (l *Log) DurableAfter(index uint64) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.CommitIndex() > index || l.failure != nil || l.closing {
		return closedChannel
	}
	if l.advanced == nil {
		l.advanced = make(chan struct{})
	}
	return l.advanced
}

// closedChannel is returned by DurableAfter when there is nothing to wait for.
var closedChannel = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// notifyDurableLocked wakes the DurableAfter waiters.
func (l *Log) notifyDurableLocked() {
	if l.advanced != nil {
		close(l.advanced)
		l.advanced = nil
	}
}
