package wal

import "errors"

// Sentinel errors; test for them with errors.Is. Returned errors add the
// file, byte offset and record index where they are known, and may wrap the
// underlying cause as well (an ErrFailed wraps the I/O error that caused it).
var (
	// ErrCorrupt reports damage that is not a torn tail: a frame that fails
	// validation (magic, version, type, length bound, CRC-32C) and is followed
	// by a valid frame with a larger index, a valid frame whose index is not
	// the one its position implies, or a segment that tidwall/wal cannot
	// parse. Open returns it for the last segment, Replay for any segment.
	// Nothing is repaired: the operator decides (restore, or cut the log by
	// hand). Corruption of the very last frame cannot be told from a torn
	// write and is repaired as one.
	ErrCorrupt = errors.New("wal: corrupt")

	// ErrTornTail reports that a segment ends in bytes that are not a valid
	// frame and that no valid frame follows them: a write cut by a crash,
	// zero-filled blocks, or garbage. Open repairs such a tail itself
	// (truncate, fsync, log a warning) and never returns ErrTornTail; only
	// ScanSegment does.
	ErrTornTail = errors.New("wal: torn tail")

	// ErrFailed is the sticky error after a Store write, sync or truncation
	// failed. From then on the Log acknowledges nothing: every waiter is
	// released with it and Append refuses. Only Close and a new Open clear it
	// (fail-stop; a failed fsync is never retried and then acknowledged).
	ErrFailed = errors.New("wal: failed")

	// ErrSyncFailed is wrapped, with ErrFailed, when any fsync of the log
	// failed: the flusher's, tidwall's of a full segment inside WriteBatch,
	// the directory's after a new segment or a truncation; and by Open when
	// one of its fsyncs failed (the cut of a torn tail, the records found,
	// the directory, the parent of a directory it created). After a failed
	// writeback Linux may mark the pages (or directory entries) clean while
	// keeping them in its cache ("fsyncgate"): reading the log back can
	// then show records that are not on disk, and the next fsync succeeds,
	// so the caller must not rebuild state from this log while the machine
	// runs on (PostgreSQL panics; seckill's SKU stays down until the
	// process restarts).
	ErrSyncFailed = errors.New("wal: fsync failed")

	// ErrClosed is returned by Append, Replay and TruncateFront after Close,
	// and passed to waiters still registered when the Log closed.
	ErrClosed = errors.New("wal: closed")

	// ErrFrameTooLarge is returned by Append and AppendFrame for a payload
	// longer than MaxPayloadSize, and wrapped (with ErrCorrupt) by
	// DecodeFrame for an input longer than MaxFrameSize.
	ErrFrameTooLarge = errors.New("wal: frame too large")

	// ErrInvalidType is returned by Append and AppendFrame for record type 0,
	// which the frame format reserves so that zero-filled bytes never decode.
	ErrInvalidType = errors.New("wal: record type 0 is reserved")

	// ErrOutOfRange is returned by TruncateFront for an index beyond
	// DurableIndex()+1: a snapshot may only cover durable records.
	ErrOutOfRange = errors.New("wal: index out of range")

	// ErrNotStepped is returned by Flush on a Log not opened with
	// Options.Stepped: its own flusher goroutine commits.
	ErrNotStepped = errors.New("wal: Flush needs Options.Stepped")

	// ErrInvalidOptions is returned by Open for a negative size or limit, or
	// an unknown FsyncMode.
	ErrInvalidOptions = errors.New("wal: invalid options")
)
