package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// SegmentFiles is a closed log's segment files as a cut changes them: a
// directory (CutAfter) or the simulator's disk (package sim), so that both
// cut through CutSegments.
type SegmentFiles interface {
	// Segments lists the segments holding records, in index order.
	Segments() ([]Segment, error)
	// ReadSegment returns a segment's bytes (read-only, not kept).
	ReadSegment(seg Segment) ([]byte, error)
	// RemoveSegment removes a segment file; durable once SyncDir returns.
	RemoveSegment(seg Segment) error
	// TruncateSegment cuts a segment file to size bytes, durably.
	TruncateSegment(seg Segment, size int64) error
	// SyncDir makes the removals durable.
	SyncDir() error
}

// CutAfter removes every record after last from the closed log in dir,
// and returns how many it removed: CutSegments over dir's files.
//
// ErrOutOfRange when last+1 is below the log's first index: the records
// kept would not reach it, and the replica needs a base copy instead.
// ErrCorrupt when a segment is damaged other than by a torn tail (Open
// would refuse it too). The log must not be open.
func CutAfter(dir string, last uint64, logger *slog.Logger) (removed uint64, err error) {
	return CutSegments(dir, dirFiles(dir), last, logger)
}

// CutSegments removes every record after last from a closed log's
// segment files (name stands for them in messages). A former primary that
// rejoins its replica set as a standby cuts the records the new primary
// does not hold before it streams from it: they were never committed
// (they lacked a standby's acknowledgement), and keeping them would fork
// the history, as PostgreSQL's pg_rewind undoes a forked timeline.
// Segments that begin after last are removed; the one holding last is cut
// after last's entry; the files and then the directory are fsynced, so a
// crash leaves either the old or the cut log, never a torn one. If every
// record goes, an empty segment named last+1 is left, so the log goes on
// at last+1 (a cut never moves the log's indexes back). A cut is logged as
// a warning, naming what went. Errors as CutAfter's.
func CutSegments(name string, files SegmentFiles, last uint64, logger *slog.Logger) (removed uint64, err error) {
	segs, err := files.Segments()
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	if last+1 < segs[0].FirstIndex {
		return 0, fmt.Errorf("%w: cut %s after record %d, but it begins at record %d", ErrOutOfRange, name, last, segs[0].FirstIndex)
	}
	removedFiles := false
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		data, err := files.ReadSegment(seg)
		if err != nil {
			return removed, err
		}
		valid, segLast, err := ScanSegment(data, seg.FirstIndex)
		if err != nil && !errors.Is(err, ErrTornTail) {
			return removed, fmt.Errorf("segment %s: %w", seg.Path, err)
		}
		if segLast <= last && valid == len(data) {
			break // this segment and those before it are kept whole
		}
		if seg.FirstIndex > last && i > 0 {
			if err := files.RemoveSegment(seg); err != nil {
				return removed, err
			}
			removed += segLast + 1 - seg.FirstIndex
			removedFiles = true
			continue
		}
		keep := offsetAfter(data, seg.FirstIndex, last)
		if err := files.TruncateSegment(seg, int64(keep)); err != nil {
			return removed, err
		}
		if segLast > last {
			removed += segLast - last
		}
		break // (a first segment that held only later records is now empty, named last+1)
	}
	if removedFiles {
		if err := files.SyncDir(); err != nil {
			return removed, err
		}
	}
	if removed > 0 {
		logger.Warn("wal: cut records after a rejoin: they were never committed",
			"dir", name, "kept_through", last, "records_removed", removed)
	}
	return removed, nil
}

// dirFiles is a log directory's segment files.
type dirFiles string

func (d dirFiles) Segments() ([]Segment, error)            { return Segments(string(d)) }
func (d dirFiles) ReadSegment(seg Segment) ([]byte, error) { return os.ReadFile(seg.Path) }
func (d dirFiles) RemoveSegment(seg Segment) error         { return os.Remove(seg.Path) }
func (d dirFiles) TruncateSegment(seg Segment, size int64) error {
	return truncateFile(seg.Path, size, true)
}
func (d dirFiles) SyncDir() error { return SyncDir(string(d)) }

// offsetAfter returns the offset just past the entry of record last in a
// segment's data whose first entry is record first (0 when last < first),
// walking only valid entries (ScanSegment checked them).
func offsetAfter(data []byte, first, last uint64) int {
	pos := 0
	for index := first; index <= last && pos < len(data); index++ {
		_, next, fault := entryAt(data, pos)
		if fault != "" {
			break
		}
		pos = next
	}
	return pos
}
