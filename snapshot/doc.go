// Package snapshot stores one SKU's whole state at a log index in a file,
// so that recovery replays only the records after it and the log before it
// can be truncated. The state itself is encoded by the pure sku package
// (sku.Frozen.Encode, sku.DecodeState); this package frames it, checksums
// it, and does the file work: temp file, fsync, rename, directory fsync,
// verify on write and on load. Which snapshot a recovery starts from is
// decided by package recovery alone, through the Snapshots interface that
// Dir (files) and Memory (Marshal's bytes kept in memory, for tests and the
// simulator) implement; directory fsyncs are wal.SyncDir, and the folder
// is made by wal.CreateDir (its parent fsynced).
//
// # Files
//
// A SKU's snapshots live beside its log:
//
//	<data-dir>/<campaign>/<sku>/wal/                      the log (package wal)
//	<data-dir>/<campaign>/<sku>/snapshots/<index>.snap    index in 20 decimal digits
//
// A snapshot is written as <index>.snap.<random>.tmp, fsynced, checked,
// renamed to <index>.snap, and the directory is fsynced (the first one
// makes snapshots/ and fsyncs the SKU's folder too): a crash leaves
// either no file or a whole one (leftover .tmp files are removed at the next
// start). A file whose checksum fails is reported and the previous snapshot
// is used (recovery.Plan).
//
// # Format
//
// All integers little-endian. These constants are part of the on-disk
// format and frozen: a new layout gets a new Version, numbers are never
// reused.
//
//	offset  size  field
//	     0     8  magic         "SECKSNAP" (Magic)
//	     8     2  version       uint16, Version = 1
//	    10     2  header_size   uint16, H = FixedHeaderSize + 2 + c + s
//	    12     4  flags         uint32, 0 (no flag is defined; others are refused)
//	    16     8  index         uint64, log index of the last record the state includes
//	    24     8  created_at    int64, Unix ms when the file was written (wall clock)
//	    32     8  last_at       int64, Unix ms: decision time of the last record applied
//	    40     4  reservations  uint32, reservations in the state
//	    44     4  rejections    uint32, durable rejections in the state
//	    48     4  refunds       uint32, payments to refund in the state
//	    52     1  c             campaign id length, 1..64
//	    53     c  campaign id
//	  53+c     1  s             SKU id length, 1..64
//	  54+c     s  SKU id
//	     H     b  state         sku state encoding (its first byte is sku.StateFormatVersion)
//	   H+b     4  crc32c        CRC-32C (Castagnoli) of bytes [0, H+b)
//
//	0          8     10   12      16      24        32        40    44    48    52   53    53+c   54+c   H           H+b
//	+----------+-----+----+-------+-------+---------+---------+-----+-----+-----+----+-----+------+------+-----------+--------+
//	| SECKSNAP | ver | H  | flags | index | created | last_at | res | rej | ref | c  | cid | s    | sid  | state ... | crc32c |
//	+----------+-----+----+-------+-------+---------+---------+-----+-----+-----+----+-----+------+------+-----------+--------+
//	|<--------------------------------------- CRC-32C covers bytes [0, H+b) ---------------------------------------->|<--4--->|
//
// The state runs from H to the file size minus 4: its length is not stored,
// so the state can be streamed while the checksum is computed. The header's
// counts and ids are checked against the decoded state.
//
// # What a snapshot holds
//
// The campaign and SKU definition, the pause flag, the clock (last_at), the
// token pool (tokens handed out and the FIFO of released ones; the token
// slots are derived from the reservations), every reservation with its
// payment, close and refund details, the durable rejections and the list of
// payments to refund. The request_id and user indexes, the counters and the
// expiry cursor are derived and rebuilt on load. See sku.StateFormatVersion
// for the state's own layout.
package snapshot
