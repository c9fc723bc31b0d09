package wal

import (
	"fmt"
	"log/slog"
	"os"
)

// repairTail validates the segment that tidwall/wal will append to, before
// tidwall opens it (tidwall fails on a cut entry and reads zeroes as empty
// entries). A torn tail is cut off, fsynced, and reported with a warning; an
// error wrapping ErrCorrupt, naming the file, is returned when valid frames
// follow the damage. Older segments are checked by Replay.
func repairTail(dir string, logger *slog.Logger, syncFiles bool) error {
	files, err := listSegments(dir)
	if err != nil {
		return err
	}
	tail, ok := tailSegment(files)
	if !ok {
		return nil
	}
	path := segmentPath(dir, tail.name)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return cutTornTail(path, data, tail.index, logger, func(size int) error {
		return truncateFile(path, int64(size), syncFiles)
	})
}

// cutTornTail applies DecideTail, the torn-tail rule, for Open and
// OpenOver, to the bytes of the tail segment named path whose first entry
// is firstIndex: a torn tail is cut with cut(bytes to keep) and reported to
// logger; damage followed by a valid frame is an error wrapping ErrCorrupt.
func cutTornTail(path string, data []byte, firstIndex uint64, logger *slog.Logger, cut func(size int) error) error {
	d, err := DecideTail(data, firstIndex)
	switch {
	case err != nil:
		return fmt.Errorf("segment %s: %w", path, err)
	case d.Dropped == 0 || mutantKeepTornTail:
		return nil
	}
	if err := cut(d.Keep); err != nil {
		return fmt.Errorf("cut torn tail of %s: %w", path, err)
	}
	logger.Warn("wal: cut torn tail",
		"file", path,
		"offset", d.Keep,
		"bytes_dropped", d.Dropped,
		"last_index", d.LastIndex,
		"reason", ErrTornTail.Error()+": "+d.Reason)
	return nil
}

// truncateFile cuts the file at size and, if syncFiles, fsyncs it. The
// fsync writes back whatever of the file is still in the page cache (the
// records a crashed process wrote): its failure wraps ErrSyncFailed, as
// Open's own fsync of those records does.
func truncateFile(path string, size int64, syncFiles bool) error {
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = file.Truncate(size)
	if err == nil && syncFiles {
		if err = file.Sync(); err != nil {
			err = fmt.Errorf("%w: %w", ErrSyncFailed, err)
		}
	}
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	return err
}
