package wal

import "fmt"

// SegmentedStore is implemented by a Store that keeps its entries in
// segments which a truncation rewrites in part (tidwall/wal rewrites the
// segment holding the new first entry). TruncateBefore asks it where its
// segments begin, to cut where the rewrite is smallest. A Store without
// segments (an in-memory twin) need not implement it.
type SegmentedStore interface {
	// SegmentStarts returns the index of the first entry of every segment,
	// ascending.
	SegmentStarts() ([]uint64, error)
}

// TruncateBefore removes records no longer needed because a snapshot
// covers every record below need, choosing the cut itself, and returns the
// new first index (0 when it cut nothing). With a SegmentedStore it cuts at
// the last record of an older segment (the record before a later
// segment's first index), at most need and beyond the current first
// record, so that the rewrite is one record; records are kept until a whole
// segment is covered (truncationPoint). With any other Store it cuts at
// need. The cut is made by TruncateFront, with its errors: a Store failure
// is sticky (ErrFailed). An error listing the segments is returned without
// failing the log (nothing was changed). Call it from the goroutine that
// calls TruncateFront.
func (l *Log) TruncateBefore(need uint64) (uint64, error) {
	cut := need
	if s, ok := l.store.(SegmentedStore); ok {
		l.storeMu.Lock()
		starts, err := s.SegmentStarts()
		l.storeMu.Unlock()
		if err != nil {
			return 0, fmt.Errorf("wal: list the segments of %s: %w", l.dir, err)
		}
		cut = truncationPoint(starts, need, l.firstIndex.Load())
	}
	if cut <= l.firstIndex.Load() {
		return 0, nil
	}
	if err := l.TruncateFront(cut); err != nil {
		return 0, err
	}
	return cut, nil
}

// truncationPoint returns the largest index that ends a segment (the one
// before a later segment's first index), is at most need (the first record
// still needed) and beyond first (the log's first record); 0 if none.
func truncationPoint(starts []uint64, need, first uint64) uint64 {
	var cut uint64
	for _, s := range starts {
		if s >= 2 && s-1 <= need && s-1 > first {
			cut = s - 1
		}
	}
	return cut
}

// SegmentStarts lists the segment files of the store's directory.
func (s *tidwallStore) SegmentStarts() ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	segs, err := Segments(s.dir)
	if err != nil {
		return nil, err
	}
	starts := make([]uint64, len(segs))
	for i, seg := range segs {
		starts[i] = seg.FirstIndex
	}
	return starts, nil
}
