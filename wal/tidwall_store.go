package wal

import (
	"errors"
	"fmt"
	"os"
	"sync"

	tidwal "github.com/tidwall/wal"
)

// tidwallStore is the Store over github.com/tidwall/wal, opened with NoSync
// (the flusher calls Sync itself), NoCopy (Read returns tidwall's buffer:
// existing bytes of it are never rewritten in place), and AllowEmpty (a
// snapshot may cover every record).
//
// tidwall creates segment files inside WriteBatch without saying so. The
// store mirrors tidwall's cycle rule on the size of the tail segment, which
// is also what tidwall measures (its in-memory copy of the tail file):
//   - before the batch, a tail already above SegmentSize is closed;
//   - after each entry, a tail at or above SegmentSize is closed;
//
// and each close creates the next segment file. The mirror is seeded from the
// tail file's size at Open and after a TruncateFront that rewrote the tail.
//
// At rest the store holds one file descriptor: tidwall's tail segment.
// SyncDir opens the directory, fsyncs and closes it each time (once per new
// segment, at Open and after TruncateFront): an engine of thousands of logs
// must not pay a second descriptor per log for a rare fsync.
type tidwallStore struct {
	dir         string
	segmentSize int
	log         *tidwal.Log

	mu        sync.Mutex   // guards the fields below and orders WriteBatch vs TruncateFront
	batch     tidwal.Batch // reused; its buffers grow to the largest batch
	tailIndex uint64       // first index of the tail segment
	tailSize  int          // bytes in the tail segment
}

// OpenTidwallStore opens (creating if needed) a tidwall/wal log in dir,
// which must exist. It is the Store that Open uses when Options.OpenStore is
// nil; tests wrap it to inject faults. It does not repair a torn tail (Open
// does that first) and converts a panic inside tidwall into an error.
func OpenTidwallStore(dir string, o StoreOptions) (_ Store, err error) {
	if o.SegmentSize <= 0 {
		return nil, fmt.Errorf("%w: SegmentSize %d", ErrInvalidOptions, o.SegmentSize)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: tidwall/wal open %s panicked: %v", ErrCorrupt, dir, r)
		}
	}()
	log, err := tidwal.Open(dir, &tidwal.Options{
		NoSync:           true,
		SegmentSize:      o.SegmentSize,
		LogFormat:        tidwal.Binary,
		SegmentCacheSize: 1,
		NoCopy:           true,
		AllowEmpty:       true,
		DirPerms:         0o750,
		FilePerms:        0o640,
	})
	if err != nil {
		return nil, mapTidwallError(err)
	}
	s := &tidwallStore{dir: dir, segmentSize: o.SegmentSize, log: log}
	if err := s.seedTail(); err != nil {
		log.Close()
		return nil, err
	}
	return s, nil
}

// seedTail sets the cycle mirror from the last segment file on disk.
func (s *tidwallStore) seedTail() error {
	files, err := listSegments(s.dir)
	if err != nil {
		return err
	}
	tail, ok := tailSegment(files)
	if !ok {
		return fmt.Errorf("%w: no segment file in %s after open", ErrCorrupt, s.dir)
	}
	info, err := os.Stat(segmentPath(s.dir, tail.name))
	if err != nil {
		return err
	}
	s.tailIndex, s.tailSize = tail.index, int(info.Size())
	return nil
}

func (s *tidwallStore) WriteBatch(b *Batch) (segmentsCreated int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch.Clear()
	index := b.FirstIndex()
	if s.tailSize > s.segmentSize {
		segmentsCreated++
		s.tailIndex, s.tailSize = index, 0
	}
	for i := 0; i < b.Len(); i++ {
		frame := b.Frame(i)
		s.batch.Write(index, frame)
		s.tailSize += uvarintSize(uint64(len(frame))) + len(frame)
		index++
		if s.tailSize >= s.segmentSize {
			segmentsCreated++
			s.tailIndex, s.tailSize = index, 0
		}
	}
	if err := s.log.WriteBatch(&s.batch); err != nil {
		return segmentsCreated, writeBatchError(err)
	}
	return segmentsCreated, nil
}

// writeBatchError is mapTidwallError for WriteBatch, which fsyncs too:
// tidwall fsyncs a full segment before it creates the next one, so a
// failure there is a failed fsync of records already written
// (ErrSyncFailed), not a write that a reopened log may simply retry.
func writeBatchError(err error) error {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) && pathErr.Op == "sync" {
		return fmt.Errorf("%w: of a full segment: %w", ErrSyncFailed, err)
	}
	return mapTidwallError(err)
}

func (s *tidwallStore) Sync() error { return mapTidwallError(s.log.Sync()) }

// SyncDir fsyncs the log's directory through a descriptor of its own,
// closed before it returns (see the type's comment).
func (s *tidwallStore) SyncDir() error { return SyncDir(s.dir) }

func (s *tidwallStore) FirstIndex() (uint64, error) {
	index, err := s.log.FirstIndex()
	return index, mapTidwallError(err)
}

func (s *tidwallStore) LastIndex() (uint64, error) {
	index, err := s.log.LastIndex()
	return index, mapTidwallError(err)
}

// Read recovers from tidwall's panic on an older segment that holds fewer
// entries than the next segment's name implies (it indexes without a bounds
// check).
func (s *tidwallStore) Read(index uint64) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			data, err = nil, fmt.Errorf("%w: no entry for index %d in its segment (tidwall/wal: %v)", ErrCorrupt, index, r)
		}
	}()
	data, err = s.log.Read(index)
	return data, mapTidwallError(err)
}

func (s *tidwallStore) TruncateFront(index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.log.TruncateFront(index); err != nil {
		return mapTidwallError(err)
	}
	if index < s.tailIndex {
		return nil // only older segments were removed
	}
	// tidwall rewrote the tail segment as the file named after index.
	info, err := os.Stat(segmentPath(s.dir, segmentName(index)))
	if err != nil {
		return err
	}
	s.tailIndex, s.tailSize = index, int(info.Size())
	return nil
}

func (s *tidwallStore) Close() error { return mapTidwallError(s.log.Close()) }

// mapTidwallError turns tidwall's sentinels into this package's.
func mapTidwallError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tidwal.ErrClosed):
		return fmt.Errorf("%w: tidwall/wal: %w", ErrClosed, err)
	case errors.Is(err, tidwal.ErrCorrupt):
		return fmt.Errorf("%w: tidwall/wal: %w", ErrCorrupt, err)
	}
	return err
}

// uvarintSize returns the size in bytes of x as a uvarint.
func uvarintSize(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
