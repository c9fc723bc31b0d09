// Package recovery is the one owner of the recovery rule: which snapshot a
// SKU's state starts from, from which record the log is replayed, and when
// the files cannot be trusted (a log shorter than a whole snapshot, a log
// that does not reach back to record 1 with no snapshot to start from).
// seckilld's SKU actors (package actors) and seckillctl (verify, inspect,
// restore, export, snapshot) both call Plan; neither decides it again.
//
// Plan is pure in the sense of the project's rules: no goroutine, no clock,
// and I/O only through the two small interfaces it is handed, Log and
// Snapshots. *wal.Log (a log opened by its owner) and *wal.Reader (a
// read-only view beside a running engine) are Logs; snapshot.Dir (files)
// and *snapshot.Memory (encoded bytes in memory, for tests and the
// simulator) are Snapshots.
//
// # The rule
//
//  1. The log holds records first..last (first = last+1 when it holds none).
//  2. Each snapshot is judged by its header (in verify mode, by its whole
//     checksum): it is usable when it names the expected SKU, holds the
//     index its name says, and the log holds every record after it
//     (first <= index+1 and index <= last), and it is not after the point
//     in time asked for (UntilIndex, UntilTime).
//  3. A snapshot beyond the log's end that reads back whole proves that the
//     log lost durable records (a snapshot is written only once the log is
//     durable up to its index): Plan refuses (ErrShortLog) rather than let
//     the SKU sell from a shorter history; in verify mode it is a problem
//     reported with the rest.
//  4. The base is the newest usable snapshot that reads back whole (in
//     verify mode: record 1 when the log has it, else the oldest usable
//     one); a damaged one is reported and the next tried. With no base the
//     log must start at record 1, else Plan refuses (ErrNoBase).
//  5. The records after the base are applied up to the point asked for; in
//     verify mode every usable snapshot passed on the way is compared with
//     the replayed state (sku.Machine.Hash).
package recovery
