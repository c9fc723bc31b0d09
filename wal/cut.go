package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// CutAfter removes every record after last from the closed log in dir,
// and returns how many it removed. A former primary that rejoins its
// replica set as a standby cuts the records the new primary does not
// hold before it streams from it: they were never committed (they lacked
// a standby's acknowledgement), and keeping them would fork the history,
// as PostgreSQL's pg_rewind undoes a forked timeline. Segments that begin
// after last are removed; the one holding last is cut after last's entry;
// the files and then dir are fsynced, so a crash leaves either the old or
// the cut log, never a torn one. If every record goes, an empty segment
// named last+1 is left, so the log goes on at last+1 (a cut never moves
// the log's indexes back). A cut is logged as a warning, naming what went.
//
// ErrOutOfRange when last+1 is below the log's first index: the records
// kept would not reach it, and the replica needs a base copy instead.
// ErrCorrupt when a segment is damaged other than by a torn tail (Open
// would refuse it too). The log must not be open.
func CutAfter(dir string, last uint64, logger *slog.Logger) (removed uint64, err error) {
	segs, err := Segments(dir)
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	if last+1 < segs[0].FirstIndex {
		return 0, fmt.Errorf("%w: cut %s after record %d, but it begins at record %d", ErrOutOfRange, dir, last, segs[0].FirstIndex)
	}
	removedFiles := false
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		data, err := os.ReadFile(seg.Path)
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
			if err := os.Remove(seg.Path); err != nil {
				return removed, err
			}
			removed += segLast + 1 - seg.FirstIndex
			removedFiles = true
			continue
		}
		keep := offsetAfter(data, seg.FirstIndex, last)
		if err := truncateFile(seg.Path, int64(keep), true); err != nil {
			return removed, err
		}
		if segLast > last {
			removed += segLast - last
		}
		break // (a first segment that held only later records is now empty, named last+1)
	}
	if removedFiles {
		if err := SyncDir(dir); err != nil {
			return removed, err
		}
	}
	if removed > 0 {
		logger.Warn("wal: cut records after a rejoin: they were never committed",
			"dir", dir, "kept_through", last, "records_removed", removed)
	}
	return removed, nil
}

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
