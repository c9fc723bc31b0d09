package wal

import "fmt"

// SegmentStore is a Store that shows its tail segment, so that OpenOver can
// run on it the torn-tail repair that Open runs on a directory before
// tidwall/wal opens it. The simulator's in-memory disk (package sim)
// implements it. Until CutTailSegment has run, such a store must accept a
// tail segment that ends in a cut entry, zeros or garbage, and hold only
// the entries before it.
type SegmentStore interface {
	Store
	// TailSegment returns the bytes of the segment that writes append to
	// and the index of its first entry; ok is false when there is none.
	// data is read-only and not kept.
	TailSegment() (data []byte, firstIndex uint64, ok bool, err error)
	// CutTailSegment truncates the tail segment to size bytes, durably.
	CutTailSegment(size int) error
}

// OpenOver opens a Log over a store the caller opened, without touching a
// directory; name stands for the directory in messages and in Dir. It runs
// Open's steps on the store: the torn-tail repair of the tail segment (the
// same rule, cutTornTail), then loading the indexes and, with FsyncAlways,
// an fsync of the store and its directory. Options.OpenStore is ignored. On
// error the store is closed. With Options.Stepped no goroutine is started.
func OpenOver(name string, store SegmentStore, opts Options) (l *Log, err error) {
	defer func() {
		if r := recover(); r != nil {
			store.Close()
			l, err = nil, fmt.Errorf("wal: open %s: %w: panic: %v", name, ErrCorrupt, r)
		}
	}()
	o, err := opts.withDefaults()
	if err != nil {
		store.Close()
		return nil, err
	}
	if err := repairStoreTail(name, store, o); err != nil {
		store.Close()
		return nil, fmt.Errorf("wal: open %s: %w", name, err)
	}
	l = newLog(name, o, store)
	if err := l.load(o.Fsync == FsyncAlways); err != nil {
		store.Close()
		return nil, fmt.Errorf("wal: open %s: %w", name, err)
	}
	l.start()
	return l, nil
}

// repairStoreTail is repairTail over a SegmentStore.
func repairStoreTail(name string, store SegmentStore, o Options) error {
	data, first, ok, err := store.TailSegment()
	if err != nil || !ok {
		return err
	}
	return cutTornTail(segmentPath(name, segmentName(first)), data, first, o.Logger, store.CutTailSegment)
}
