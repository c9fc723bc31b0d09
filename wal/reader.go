package wal

import (
	"errors"
	"fmt"
	"os"
)

// readAttempts bounds how often OpenReader starts again when a segment file
// disappears while it reads (a running engine truncated the log).
const readAttempts = 3

// Reader is a read-only view of a log directory, for a tool that runs
// offline or beside a running engine (seckillctl). It never writes a byte:
// where Open would cut a torn tail, the Reader reports it (TornTail) and
// leaves it. It holds the valid bytes of every segment in memory (the
// log's size on disk), read once by OpenReader, so what it reports is one
// consistent view even while the engine appends and truncates.
//
// Its methods may be called from any goroutine; it holds no file open.
type Reader struct {
	dir       string
	segs      []readSegment
	first     uint64 // first index held; last+1 when it holds none
	last      uint64 // last index held
	tornBytes int
	tornWhy   string
}

// readSegment is one segment's valid bytes.
type readSegment struct {
	first uint64 // index of its first entry
	data  []byte // whole entries only
}

// OpenReader reads and validates every segment of the log in dir, with the
// rules of Open and Replay: each segment must start at the index after the
// previous one's last; every entry must be a valid frame at its index. A
// torn tail of the newest segment (DecideTail) is reported, not an error;
// any other damage returns an error wrapping ErrCorrupt that names the file.
// A directory without segment files is an empty log whose first record
// will be 1 (what Open would create). When a segment file disappears while
// it is read (a running engine truncated the log), it starts again, up to
// readAttempts times; the last error wraps os.ErrNotExist.
func OpenReader(dir string) (*Reader, error) {
	var err error
	for attempt := 0; attempt < readAttempts; attempt++ {
		var r *Reader
		if r, err = openReaderOnce(dir); !errors.Is(err, os.ErrNotExist) {
			return r, err
		}
	}
	return nil, err
}

func openReaderOnce(dir string) (*Reader, error) {
	segs, err := Segments(dir)
	if err != nil {
		return nil, err
	}
	r := &Reader{dir: dir, first: 1}
	if len(segs) == 0 {
		return r, nil
	}
	r.first = segs[0].FirstIndex
	expected := segs[0].FirstIndex
	for i, s := range segs {
		if s.FirstIndex != expected {
			return nil, fmt.Errorf("%w: %s starts at index %d, the previous segment ends at %d",
				ErrCorrupt, s.Path, s.FirstIndex, expected-1)
		}
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, err
		}
		d, err := DecideTail(data, s.FirstIndex)
		if err == nil && d.Dropped > 0 && i != len(segs)-1 {
			// Older segments were fsynced whole before a newer one was
			// created: a cut one has lost records.
			err = fmt.Errorf("%w: %s (not the newest segment)", ErrCorrupt, d.Reason)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Path, err)
		}
		r.tornBytes, r.tornWhy = d.Dropped, d.Reason
		r.segs = append(r.segs, readSegment{first: s.FirstIndex, data: data[:d.Keep]})
		expected = d.LastIndex + 1
	}
	r.last = expected - 1
	return r, nil
}

// Dir returns the log directory read.
func (r *Reader) Dir() string { return r.dir }

// FirstIndex returns the index of the oldest record, or 0 when the log
// holds none (as Log.FirstIndex).
func (r *Reader) FirstIndex() uint64 {
	if r.first > r.last {
		return 0
	}
	return r.first
}

// NextIndex returns the index the next record appended to this log would
// get: LastIndex()+1 (1 for a directory without segment files).
func (r *Reader) NextIndex() uint64 { return r.last + 1 }

// LastIndex returns the index of the newest valid record; 0 for a log that
// never held one. A log truncated past its last record holds none and
// still has a LastIndex.
func (r *Reader) LastIndex() uint64 { return r.last }

// Segments returns the number of segment files read.
func (r *Reader) Segments() int { return len(r.segs) }

// TornTail returns the size in bytes of what follows the last valid frame
// of the newest segment, and why it is not a frame (DecideTail's Reason):
// a write in progress, or a torn write that Open cuts at the engine's next
// start. It is not corruption. 0 and "" when there is none.
func (r *Reader) TornTail() (bytes int, reason string) { return r.tornBytes, r.tornWhy }

// Replay calls fn in index order for every record with an index >= from,
// through LastIndex(), with the same checks as Log.Replay: every frame is
// validated again and must hold the index it is stored at (else an error
// wrapping ErrCorrupt that names the index). payload aliases the Reader's
// memory: fn must not modify it. An error from fn stops the replay and is
// returned as is.
func (r *Reader) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	return r.frames(from, r.last, func(index uint64, frame []byte) error {
		typ, frameIndex, payload, err := DecodeFrame(frame)
		if err != nil {
			return fmt.Errorf("wal: record %d: %w", index, err)
		}
		if frameIndex != index {
			return fmt.Errorf("%w: record %d holds the frame of index %d", ErrCorrupt, index, frameIndex)
		}
		return fn(index, typ, payload)
	})
}

// frames calls fn with the frame of every record from..to held, in order.
func (r *Reader) frames(from, to uint64, fn func(index uint64, frame []byte) error) error {
	for _, s := range r.segs {
		index := s.first
		for pos := 0; pos < len(s.data) && index <= to; index++ {
			frame, next, fault := entryAt(s.data, pos)
			if fault != "" {
				return fmt.Errorf("%w: record %d: %s", ErrCorrupt, index, fault)
			}
			pos = next
			if index < from {
				continue
			}
			if err := fn(index, frame); err != nil {
				return err
			}
		}
	}
	return nil
}
