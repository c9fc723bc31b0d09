// Package core is the single-threaded core of one SKU actor: it decides
// calls with the SKU's sku.Machine and says, as data, what the shell around
// it must do. It runs no goroutine, reads no clock and does no I/O (the
// reservation id key is drawn from the io.Reader it is handed), so the same
// inputs always give the same outputs. Its one shell, package
// actors/shell, drives it over a wal.Log and snapshot files, hosted by the
// protoactor actor (package actors) in production and by the simulator
// (package sim) over a simulated disk. The split follows etcd raft's
// RawNode and Ready.
//
// # The protocol
//
// A round is any number of Decide and Tick inputs, then Ready, then
// Advance:
//
//	c.Decide(now, call) ...         // decide calls; the Machine changes at once
//	c.Tick(now)                     // expiry, timers (optional)
//	rd := c.Ready()                 // the records to append, in order
//	n, err := appendAll(rd.Records) // the shell appends them to the log
//	act := c.Advance(n, err)        // what to answer, and what waits for the disk
//
// The shell must append Ready's records in order, giving the first one
// index Ready.FirstIndex, and report how many it appended and the error
// that stopped it (Advance). It then
//   - answers act.Answer at once (their Err is set);
//   - releases act.Wait.Calls once the log is durable up to act.Wait.Index,
//     or with the log's error: Settle sets each call's Err;
//   - starts act.Snapshot (a frozen state at act.Snapshot.Index: write it only
//     once the log is durable up to that index) and reports the result with
//     SnapshotDone;
//   - when act.Recover is set, rebuilds the Machine from disk (newest usable
//     snapshot plus replay) and reports Recovered or RecoveryFailed.
//
// Other inputs come between rounds: Durable (the log's durable index, which
// ends the backoff after a recovery), LogFailed (a failure seen outside a
// round, e.g. a failed truncation), RequestSnapshot, SnapshotDone,
// Recovered and RecoveryFailed.
//
// # Rules the core owns
//
//   - No reply before the records it rests on are durable: a call that wrote
//     records, and a call that wrote none but read state that earlier,
//     not yet durable records made (a SOLD_OUT, a duplicate, a read), waits
//     until the log is durable up to the last record appended so far.
//   - Fail-stop: once an append fails, the Machine may hold decisions that
//     are not in the log. Every call decided in that round is answered at
//     once: one that wrote records appended before the failure gets
//     ErrResultUnknown, any other ErrUnavailable; every later call gets
//     ErrUnavailable until a recovery from disk succeeds.
//   - Recovery after a log failure (or a failed recovery, the first one
//     included) is due LogFailureRetry after the failure, then twice as
//     long after each further failure, up to MaxLogFailureRetry; the wait
//     goes back to LogFailureRetry once a record appended after a recovery
//     is durable. A failure wrapping wal.ErrSyncFailed never heals in place
//     (the page cache may show records the disk lost: PostgreSQL's fsync
//     rule): the SKU waits for a restart.
//   - A snapshot is due on a tick once SnapshotEvery records were appended
//     since the last one, or SnapshotInterval passed with records pending,
//     and not within SnapshotRetryAfter of a failed one; one runs at a time.
//
// Time is a time.Time argument of every input that decides something; the
// Machine gets it in Unix milliseconds. A core is not safe for concurrent
// use.
package core
