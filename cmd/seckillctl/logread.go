package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// The log is read with wal.Reader, never opened: wal.Open would repair a
// torn tail (a write) and tidwall/wal takes the directory for itself. The
// Reader validates every frame as Open and Replay do, never changes a
// byte, and starts again when the engine truncates the log under it, so
// seckillctl can run beside the engine. The log format is wal's alone.

// logInfo describes a log as read.
type logInfo struct {
	Dir        string `json:"dir"`
	FirstIndex uint64 `json:"first_index"` // LastIndex+1 when it holds no record
	LastIndex  uint64 `json:"last_index"`
	Segments   int    `json:"segments"`
	// TornTailBytes are bytes after the last valid frame of the newest
	// segment: a write in progress, or a torn write the engine cuts at its
	// next start. They are not corruption.
	TornTailBytes int    `json:"torn_tail_bytes"`
	TornTail      string `json:"torn_tail,omitempty"`
}

// infoOf describes what r read.
func infoOf(r *wal.Reader) logInfo {
	torn, why := r.TornTail()
	first := r.FirstIndex()
	if first == 0 {
		first = r.NextIndex()
	}
	return logInfo{Dir: r.Dir(), FirstIndex: first, LastIndex: r.LastIndex(), Segments: r.Segments(),
		TornTailBytes: torn, TornTail: why}
}

// errLogCorrupt wraps damage in the log that is not a torn tail.
var errLogCorrupt = errors.New("log corrupt")

// readLog reads the log in dir (wal.OpenReader). A directory without
// segment files is an empty log if it is a SKU's wal directory; a SKU
// directory with snapshots but no wal folder has lost its log.
func readLog(dir string) (*wal.Reader, error) {
	r, err := wal.OpenReader(dir)
	switch {
	case errors.Is(err, wal.ErrCorrupt):
		return nil, fmt.Errorf("%w: %w", errLogCorrupt, err)
	case err != nil:
		return nil, err
	case r.Segments() > 0 || filepath.Base(dir) == skudir.WALName:
		// A SKU's wal directory before its first segment (seckilld stopped
		// between creating it and writing one) is an empty log, whose
		// first record will be 1.
		return r, nil
	}
	if skudir.Dir(dir).HasSnapshots() {
		return nil, fmt.Errorf("%w: %s has snapshots but no wal folder: its log is lost "+
			"(seckilld answers UNAVAILABLE for it; seckillctl restore --from <its newest snapshot> rebuilds it up to that snapshot)",
			errLogCorrupt, dir)
	}
	return nil, fmt.Errorf("%s: no log segment files (is it a SKU's wal directory?)", dir)
}

// errStop ends a scan early without an error.
var errStop = errors.New("stop")

// scan calls fn for every record of log with from <= index, in order,
// until fn returns an error (errStop ends it quietly).
func scan(log *wal.Reader, from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	err := log.Replay(from, fn)
	if errors.Is(err, errStop) {
		return nil
	}
	if errors.Is(err, wal.ErrCorrupt) {
		return fmt.Errorf("%w: %w", errLogCorrupt, err)
	}
	return err
}
