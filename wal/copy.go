package wal

import (
	"encoding/binary"
	"fmt"
	"os"
)

// copySegmentSize bounds, in bytes, the segment files CopyRange writes
// (one larger entry alone still makes a segment).
const copySegmentSize = DefaultSegmentSize

// CopyRange creates the log directory dst (and its missing parents, fsyncing
// the parent of each one it creates) holding the records from..to of src,
// each frame copied as is: records max(from, src.FirstIndex())..to. to must
// be at most src.LastIndex() (else ErrOutOfRange). src may be nil: no record
// is copied. A range with no record gives a log holding none that continues
// at to+1 (one empty segment named to+1), so that Open on dst appends
// record to+1 next. Segment files are at most DefaultSegmentSize bytes, each
// fsynced, then dst is fsynced: on success the copy is durable. dst must
// hold no segment file (files are created exclusively). It returns the first
// and last index copied (first = last+1 = to+1 when none was).
func CopyRange(dst string, src *Reader, from, to uint64) (first, last uint64, err error) {
	if src != nil && to > src.LastIndex() {
		return 0, 0, fmt.Errorf("%w: copy records up to %d, %s ends at %d", ErrOutOfRange, to, src.Dir(), src.LastIndex())
	}
	if err := CreateDir(dst, true); err != nil {
		return 0, 0, fmt.Errorf("wal: copy to %s: %w", dst, err)
	}
	w := segmentWriter{dir: dst}
	first, last = to+1, to
	if src != nil {
		err = src.frames(from, to, func(index uint64, frame []byte) error {
			if w.file == nil {
				first = index
			}
			last = index
			return w.write(index, frame)
		})
	}
	if err == nil && w.file == nil {
		err = w.open(to + 1)
	}
	if cerr := w.close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = SyncDir(dst)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("wal: copy to %s: %w", dst, err)
	}
	return first, last, nil
}

// segmentWriter writes entries (uvarint length + frame) into segment files
// of at most copySegmentSize bytes, each fsynced when closed.
type segmentWriter struct {
	dir   string
	file  *os.File
	size  int
	entry []byte // reused
}

func (w *segmentWriter) write(index uint64, frame []byte) error {
	w.entry = binary.AppendUvarint(w.entry[:0], uint64(len(frame)))
	w.entry = append(w.entry, frame...)
	if w.file == nil || w.size+len(w.entry) > copySegmentSize {
		if err := w.open(index); err != nil {
			return err
		}
	}
	w.size += len(w.entry)
	_, err := w.file.Write(w.entry)
	return err
}

// open closes the current segment and creates the one whose first entry is index.
func (w *segmentWriter) open(index uint64) error {
	if err := w.close(); err != nil {
		return err
	}
	file, err := os.OpenFile(segmentPath(w.dir, segmentName(index)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	w.file, w.size = file, 0
	return nil
}

// close fsyncs and closes the current segment, if any.
func (w *segmentWriter) close() error {
	if w.file == nil {
		return nil
	}
	err := w.file.Sync()
	if cerr := w.file.Close(); err == nil {
		err = cerr
	}
	w.file = nil
	return err
}
