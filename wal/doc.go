// Package wal is seckill's per-SKU write-ahead log: github.com/tidwall/wal
// for segment files, plus the checks and the group commit it lacks.
//
// # One owner of the log format
//
// The on-disk log belongs to this package alone: segment names (the first
// index in 20 digits), entry framing (uvarint(len) + frame), tidwall's
// ".START"/".END" crash files, the torn-tail rule (DecideTail) and the
// choice of truncation point (Log.TruncateBefore). Other packages use its
// operations and never parse or write the files themselves:
//
//   - Log: the engine's read-write log (Open, Append, Replay, TruncateBefore);
//   - Reader (OpenReader): a read-only view that never writes a byte and can
//     run beside a live engine (seckillctl), with its range and torn-tail
//     report;
//   - CopyRange: a new, durable log directory holding a range of records
//     (seckillctl restore);
//   - DecideTail: the torn-tail decision over a segment's bytes, for Open's
//     repair, the Reader and a simulated store;
//   - SyncDir: the one directory fsync of the module, and CreateDir, a
//     folder made durably (its parent fsynced), for the log and snapshots.
//
// # Frame
//
// Every tidwall entry holds exactly one frame, little-endian:
//
//	offset  size  field
//	     0     2  magic    uint16  FrameMagic 0x5357 ("SW" read as hex; bytes 0x57 0x53)
//	     2     1  version  uint8   FrameVersion 1
//	     3     1  type     uint8   record type, opaque to wal, never 0
//	     4     8  index    uint64  log index of this entry, equal to tidwall's
//	    12     p  payload          opaque bytes, p >= 0
//	  12+p     4  crc32c   uint32  CRC-32C (Castagnoli) of bytes [0, 12+p)
//
//	+------+------+------+------+----------------+---------- ... ---+----------+
//	| 0x57 | 0x53 | 0x01 | type | index (8 bytes)| payload (p bytes) | crc32c   |
//	+------+------+------+------+----------------+---------- ... ---+----------+
//	|<------------- FrameHeaderSize = 12 ------->|                   |<-- 4 -->|
//
// A frame is FrameOverhead (16) + p bytes, at most MaxFrameSize (1 MiB).
// The length comes from tidwall's entry prefix, uvarint(frame size), which
// is bounded by MaxFrameSize before it is trusted. The CRC covers the header,
// so a frame moved to another index, a record type changed, or a zero-filled
// region (type 0, bad magic) never decodes. These constants are frozen.
//
// # Recovery
//
// tidwall cannot open a segment that ends in a cut entry, reads zero bytes at
// the tail as empty entries, and has no checksum. Open therefore scans the
// tail segment first (DecideTail): every entry must be a valid frame whose
// index follows the previous one. At the first invalid entry it looks at
// every later byte offset for a valid frame with a larger index. If there is
// none, the rest of the file is a torn tail: Open cuts it, fsyncs, and logs
// a warning with the bytes dropped. If there is one, the damage is in the
// middle of the log and Open returns an error wrapping ErrCorrupt naming the
// file, offset and index: nothing is dropped silently. Older segments are
// fsynced before a newer one is created, so they are checked by Replay,
// which validates every frame and returns ErrCorrupt on the first bad one.
// Damage to the very last frame cannot be told from a torn write.
//
// # Truncation
//
// tidwall/wal's TruncateFront rewrites the rest of the segment holding the
// new first record. TruncateBefore(need) therefore cuts at the last record
// of an older segment (the record before a later segment's first index), at
// most need: the rewrite is one record, and records are kept until a whole
// segment is covered. Which snapshot makes them unneeded is decided by
// package recovery's rule, not here.
//
// # Group commit
//
// One flusher goroutine per Log takes the whole pending batch, writes it with
// one Store.WriteBatch, fsyncs it with one Store.Sync, fsyncs the directory
// if the write created a segment file, advances DurableIndex, and only then
// calls the waiters it covers, in order: when the next batch already waits
// to be written, it hands them to the releaser goroutine, which calls them
// while the flusher writes that batch; otherwise (nothing to overlap) it
// calls them itself, saving a goroutine wake-up per batch. Meanwhile Append
// fills the other of two batch buffers, so batches grow as long as an fsync
// takes.
//
// Waits tells how long waiters wait: the age of the oldest one queued
// and the wait of the oldest one the last release let go, timed with
// Options.Clock (one clock reading per Await and per release). The
// ingress's admission reads them (package admission): a caller admitted
// now waits about that long for its records.
//
// With Options.Stepped no goroutine runs: the caller drives the same step
// (Log.flushLocked, the one place that advances DurableIndex) with Flush,
// which writes, fsyncs and releases the due waiters before it returns. The
// simulator (package sim) runs every log this way, on one goroutine, over
// an in-memory store opened with OpenOver.
//
// A write, fsync or truncation error is sticky (ErrFailed): every waiter of
// a record not yet durable, and every future waiter, gets it, Append refuses, and nothing more is acknowledged
// until the log is reopened, as PostgreSQL does after a failed fsync.
//
// # Readers beside the log
//
// ReadDurable serves readers that follow a running log (the event feed): it
// reads durable records only, from the segment files through descriptors
// of its own, so it takes neither the flusher's locks nor tidwall's (whose
// concurrent reads can race), and a truncation cannot pull a segment from
// under it (an open descriptor keeps the removed file readable). Where its
// reads ended is remembered (a small ring per Log), so a reader following
// the tail reads only new bytes. DurableAfter(index) returns a channel
// the flusher closes once DurableIndex passes index: one channel per batch
// for every long poll.
//
// ReadLocal reads the same way through DurableIndex instead of the commit
// index: records durable here that the standbys may not hold yet. Only
// the replication layer uses it, to send them to the standbys whose
// acknowledgements commit them.
//
// # Bounds
//
//   - pending batch: Options.MaxBatchRecords records and MaxBatchBytes bytes
//     (one larger frame alone); two buffers, so at most twice that in memory;
//     Append blocks while the pending one is full.
//   - waiters: Options.MaxWaiters registered and unreleased; Await blocks
//     while full. The releaser's scratch space is as large.
//   - frames: MaxFrameSize bytes; a length read from disk above it is damage.
//   - recovery scan: linear in the tail segment size (each offset is tried
//     once; the magic and an index bound skip the CRC at almost all of them).
//   - tidwall keeps the tail segment and one older segment in memory:
//     about 2 × SegmentSize bytes per Log.
//   - ReadDurable: the caller's page (maxRecords) and one pooled 64 KiB
//     read buffer per read in progress; readHintCount positions per Log.
//
// # Durability
//
// With FsyncAlways a waiter is released with nil only after the frames it
// covers and any new segment's directory entry are fsynced. A disk that
// reports a write or fsync as done and then loses it cannot be detected:
// after reopening, those records are simply absent and their indexes are
// given out again.
package wal
