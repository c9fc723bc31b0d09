package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/seckill/seckill/wal"
)

// errInjected is the I/O error of an injected write or fsync fault.
var errInjected = errors.New("sim: injected I/O error")

// storeFaults are the faults the simulator arms for the log's next calls.
type storeFaults struct {
	failWrite bool  // a WriteBatch writes a prefix of its bytes and fails
	writesOK  int   // the WriteBatches that succeed before the one that fails
	writeKeep int   // the prefix, in thousandths of the batch's bytes
	failSync  bool  // the next Sync fails and loses the unsynced bytes
	syncDelay int64 // ms the next Sync takes (slow fsync)
	// crashInSync: the power fails during the next Sync. It returns an
	// error (nobody sees it: the simulator crashes the disk next) and the
	// written bytes stay in the page cache only.
	crashInSync bool
	// wrote: a batch was written since failWrite was armed; counts, when
	// set, takes "write_error_after_a_batch" for a failure that follows
	// one (a flush or an append committing a batch and failing the next:
	// the order the recovery backoff must hold under).
	wrote  bool
	counts map[string]int
}

// logStore is a wal.SegmentStore over a simulated directory, laid out as
// tidwall/wal lays out its files: segments named by the index of their
// first entry in 20 digits, each entry uvarint(len(frame)) + frame, a new
// segment once the tail reaches the segment size (the rule wal's
// tidwallStore mirrors), the old one fsynced first. Like tidwall it
// checks no frame: wal does.
type logStore struct {
	dir         *directory
	segmentSize int
	faults      *storeFaults
	clock       *int64 // simulated ms: a slow fsync moves it
	// syncing, when set, is the time each Sync takes: the admission
	// scenario runs there what happens while the fsync runs (admission.go).
	syncing func()

	segments []segment // in index order; the last is the tail
}

// segment is one segment file and where its entries start.
type segment struct {
	first  uint64
	name   string
	starts []int // offset of each parsed entry
	end    int   // offset after the last parsed entry
}

func segmentName(index uint64) string { return fmt.Sprintf("%020d", index) }

// openLogStore loads the segments in dir (creating the first one in an
// empty dir, as tidwall does). Entries are parsed as tidwall parses them,
// by their length prefix alone; a tail whose last entry is cut stays
// as it is until wal's repair cuts it (CutTailSegment).
func openLogStore(dir *directory, segmentSize int, faults *storeFaults, clock *int64) *logStore {
	s := &logStore{dir: dir, segmentSize: segmentSize, faults: faults, clock: clock}
	for _, name := range dir.names() {
		index, err := strconv.ParseUint(name, 10, 64)
		if len(name) != 20 || err != nil || index == 0 {
			continue
		}
		s.segments = append(s.segments, s.parse(index, name))
	}
	if len(s.segments) == 0 {
		dir.create(segmentName(1))
		s.segments = []segment{{first: 1, name: segmentName(1)}}
	}
	return s
}

// parse indexes the entries of one segment file up to the first length
// prefix that does not parse or runs past the end.
func (s *logStore) parse(first uint64, name string) segment {
	seg := segment{first: first, name: name}
	data := s.dir.entries[name].cache
	pos := 0
	for pos < len(data) {
		size, n := binary.Uvarint(data[pos:])
		if n <= 0 || size > uint64(len(data)-pos-n) {
			break
		}
		seg.starts = append(seg.starts, pos)
		pos += n + int(size)
	}
	seg.end = pos
	return seg
}

func (s *logStore) tail() *segment { return &s.segments[len(s.segments)-1] }

func (s *logStore) tailFile() *file { return s.dir.entries[s.tail().name] }

// TailSegment implements wal.SegmentStore.
func (s *logStore) TailSegment() ([]byte, uint64, bool, error) {
	t := s.tail()
	return s.dir.entries[t.name].cache, t.first, true, nil
}

// CutTailSegment implements wal.SegmentStore.
func (s *logStore) CutTailSegment(size int) error {
	t := s.tail()
	s.dir.entries[t.name].truncate(size)
	*t = s.parse(t.first, t.name)
	return nil
}

func (s *logStore) FirstIndex() (uint64, error) { return s.segments[0].first, nil }

func (s *logStore) LastIndex() (uint64, error) {
	t := s.tail()
	return t.first + uint64(len(t.starts)) - 1, nil
}

// cycle fsyncs the tail and starts a new segment at index.
func (s *logStore) cycle(index uint64) {
	s.tailFile().sync(false)
	name := segmentName(index)
	s.dir.create(name)
	s.segments = append(s.segments, segment{first: index, name: name})
}

func (s *logStore) WriteBatch(b *wal.Batch) (created int, err error) {
	if last, _ := s.LastIndex(); b.FirstIndex() != last+1 {
		return 0, fmt.Errorf("sim: batch starts at %d, want %d", b.FirstIndex(), last+1)
	}
	if s.faults.failWrite && s.faults.writesOK > 0 {
		s.faults.writesOK--
		s.faults.wrote = true
	} else if s.faults.failWrite {
		s.faults.failWrite = false
		if s.faults.wrote && s.faults.counts != nil {
			s.faults.counts["write_error_after_a_batch"]++
		}
		s.faults.wrote = false
		var buf []byte
		for i := 0; i < b.Len(); i++ {
			buf = binary.AppendUvarint(buf, uint64(len(b.Frame(i))))
			buf = append(buf, b.Frame(i)...)
		}
		// A failed write may still have put some of its bytes in the
		// cache; the entry index does not count them.
		f := s.tailFile()
		f.cache = append(f.cache, buf[:len(buf)*s.faults.writeKeep/1000]...)
		return 0, errInjected
	}
	index := b.FirstIndex()
	if s.tail().end > s.segmentSize {
		s.cycle(index)
		created++
	}
	for i := 0; i < b.Len(); i++ {
		frame := b.Frame(i)
		t, f := s.tail(), s.tailFile()
		t.starts = append(t.starts, len(f.cache))
		f.cache = binary.AppendUvarint(f.cache, uint64(len(frame)))
		f.cache = append(f.cache, frame...)
		t.end = len(f.cache)
		index++
		if t.end >= s.segmentSize {
			s.cycle(index)
			created++
		}
	}
	return created, nil
}

func (s *logStore) Sync() error {
	if s.syncing != nil {
		s.syncing()
	}
	*s.clock += s.faults.syncDelay
	s.faults.syncDelay = 0
	if s.faults.crashInSync {
		return errInjected
	}
	if s.faults.failSync {
		s.faults.failSync = false
		s.tailFile().sync(true)
		return errInjected
	}
	s.tailFile().sync(false)
	return nil
}

func (s *logStore) SyncDir() error {
	s.dir.syncDir()
	return nil
}

// Read returns the frame at index from the page cache.
func (s *logStore) Read(index uint64) ([]byte, error) {
	for i := len(s.segments) - 1; i >= 0; i-- {
		seg := &s.segments[i]
		if index < seg.first {
			continue
		}
		k := index - seg.first
		if k >= uint64(len(seg.starts)) {
			return nil, fmt.Errorf("%w: sim: segment %s has no entry %d", wal.ErrCorrupt, seg.name, index)
		}
		data := s.dir.entries[seg.name].cache
		size, n := binary.Uvarint(data[seg.starts[k]:])
		start := seg.starts[k] + n
		return data[start : start+int(size)], nil
	}
	return nil, fmt.Errorf("%w: sim: no segment holds %d", wal.ErrCorrupt, index)
}

// TruncateFront removes the entries before index. At a segment's first
// index it removes the older segment files; inside a segment it rewrites
// that segment as a file named after index (fsynced) and removes the
// older ones, as one directory change (tidwall's START file makes the
// rewrite atomic across a crash). Durable once SyncDir returns.
func (s *logStore) TruncateFront(index uint64) error {
	i := len(s.segments) - 1
	for i > 0 && s.segments[i].first > index {
		i--
	}
	seg := s.segments[i]
	if seg.first == index {
		s.dir.change(func(e map[string]*file) {
			for _, old := range s.segments[:i] {
				delete(e, old.name)
			}
		})
		s.segments = s.segments[i:]
		return nil
	}
	data := s.dir.entries[seg.name].cache
	k := index - seg.first
	start := seg.end
	if k < uint64(len(seg.starts)) {
		start = seg.starts[k]
	}
	rewritten := &file{cache: append([]byte(nil), data[start:seg.end]...)}
	rewritten.sync(false)
	name := segmentName(index)
	s.dir.change(func(e map[string]*file) {
		for _, old := range s.segments[:i+1] {
			delete(e, old.name)
		}
		e[name] = rewritten
	})
	s.segments = append([]segment{s.parse(index, name)}, s.segments[i+1:]...)
	return nil
}

// Close fsyncs what was written, as tidwall's Close does.
func (s *logStore) Close() error {
	s.tailFile().sync(false)
	return nil
}

// SegmentStarts implements wal.SegmentedStore: TruncateBefore cuts where a
// segment begins.
func (s *logStore) SegmentStarts() ([]uint64, error) {
	starts := make([]uint64, len(s.segments))
	for i, seg := range s.segments {
		starts[i] = seg.first
	}
	return starts, nil
}
