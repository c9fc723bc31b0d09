// Package stream is the synchronous replication of every SKU log from a
// replica set's primary to its standbys (package replica decides who is
// which): a standby's copy holds the same records at the same indexes,
// byte for byte, and a record commits on the primary (wal.Log.Confirm)
// only once every standby it waits for holds it durably.
//
// # Connection and protocol
//
// One TCP connection per standby; the standby dials the primary's
// replication address (a standby behind a firewall needs no port of its
// own, and the primary learns its standbys from their hellos). Messages
// are length-prefixed binary (wire.go has the layout) and every one
// carries its sender's epoch. A standby refuses any message of a lower
// epoch than the highest it has seen, and makes a higher one durable
// (EpochFile) before it acts on the message; a primary refuses a standby
// that has seen a later epoch. So a primary that was deposed while
// paused (it still believes it leads) gets no acknowledgement from a
// standby that heard of its successor, and commits nothing.
//
//	standby → primary  hello   set, name, per SKU: first, last, epoch history
//	primary → standby  begin   per SKU: resume | cut after i | base copy at i
//	primary → standby  install a new snapshot of the primary's (chunks follow)
//	primary → standby  snapshot chunks of a snapshot (base copy or new)
//	primary → standby  records a run of frames from index i
//	standby → primary  ack     per SKU: the copy's durable index
//	primary → standby  commit  per SKU: the primary's commit index
//
// # Primary
//
// Per standby and SKU the primary keeps the next index to send. A copy
// begins from the standby's hello: replica.Common over both epoch
// histories says which records both hold; a standby whose log goes
// further (a former primary's tail, never committed: it lacked this
// standby's acknowledgement) cuts it first (wal.CutAfter, logged, like
// pg_rewind). A standby that needs records the primary no longer has
// (truncated behind a snapshot), or that holds none while a snapshot
// exists, gets a base copy, like pg_basebackup: the newest snapshot file,
// checked, then the log from the record after it. The copy then catches
// up from the primary's log files (wal.Log.ReadLocal: the flusher writes
// in order, so every record before a shipped batch is durable here), and
// once it reaches what the flusher ships it is live: each batch the
// flusher hands over (wal.Options.Shipper, before its local write and
// fsync, so the standbys' disks work while the primary's does) is copied
// once into a message and queued for every live connection. The flusher
// never waits: a connection's send queue is bounded (sendQueueMessages,
// sendQueueBytes: TigerBeetle's rule, a bound on every queue), and a copy
// whose queue is full goes back to catching up from disk, which reads at
// the standby's pace.
//
// The commit index of each SKU log is replica.Standbys.Commit over the
// standbys waited for (Primary.Wait): the least of their acknowledged
// indexes, and never beyond what was shipped. With none waited for it is
// the local durable index, unless strict (--sync-strict), where nothing
// commits. The role loop (seckilld) orders Wait and the sync key so that
// every standby that may be promoted is waited for (package replica, rule
// 1). Primary.Standbys tells whether a standby holds every record
// confirmed so far (CaughtUp): only then may it be published.
//
// Truncation after a snapshot keeps the records that standbys connected
// or waited for have not acknowledged (actors.Replication.RetainFrom), up
// to MaxRetainRecords per SKU: beyond it the standby is logged once, and
// counted, and gets a base copy when it comes to need the records (as
// PostgreSQL's max_slot_wal_keep_size bounds a replication slot).
//
// A SKU defined on the primary while the stream runs is copied too: its
// log opens (actors.Replication.Opened), its epoch history starts at
// (epoch, 1), and every connection begins its copy; the standby creates
// its folder. A log opened again after a failure may hold fewer records
// than were shipped (a batch is shipped before it is written), and it
// writes other records at their indexes in the same epoch, where epoch
// histories cannot tell them apart: so the standbys' acknowledgements are
// capped at its last record, their connections are closed, and each one's
// next copy begins with a cut after that record.
//
// # Standby
//
// The standby opens each copy as the engine opens its logs (wal.Open over
// <DataDir>/<campaign>/<sku>/wal), appends the primary's frames with
// wal.Log.AppendCopy (group commit by the wal's own flusher) and
// acknowledges each SKU's durable index, coalesced per SKU. Its hello
// reports only durable records. It writes each SKU's epoch history
// (HistoryFile) and the primary's feed history (feed.HistoryFile) before
// the records they describe. It begins its copies side by side
// (standby_begins.go), beginsAtOnce at once as the primary defines a
// list of SKUs: a begin is a few fsyncs (a new SKU's folder and log, its
// epoch history), and a SKU's later messages wait behind its begin, so
// each copy takes its messages in the primary's order.
//
// Each snapshot the primary writes (actors.Replication.SnapshotWritten)
// is shipped too, once the records it covers are queued before it
// (SnapshotDue): the standby checks it, keeps the newest
// standbySnapshotKeep and truncates its copy up to the oldest kept,
// never beyond the primary's first record (KeepSnapshots, run by
// InstallSnapshot; the first record is what the primary's feed retention
// and standbys hold back), so its disk use follows the primary's and a
// promotion replays little.
//
// The primary sends each SKU's commit index (msgCommit) as it rises (at
// a confirmation, or when the log tells it a batch is durable here:
// wal.DurableShipper), on a connection only once the SKU's copy began on
// it (after any cut), coalesced per SKU, with the next batch when the
// log holds records not shipped yet, else at once; the standby applies
// its copy to a sku.Machine of its own up to min(commit index, its
// durable index), never beyond, when a read comes or once a chunk of
// committed records waits: its Get and Lookup serve reads of committed
// records (reads.go). It runs no actor:
// a promoted standby closes the Standby and opens an actors.Engine over
// the same data dir, which recovers every SKU from its newest snapshot
// and log as at any start.
//
// # On disk
//
//	<DataDir>/replica-epoch            the highest epoch seen (EpochFile)
//	<DataDir>/<campaign>/<sku>/epochs  the SKU log's epoch history (HistoryFile)
//
// BeginEpoch, called by a replica that acquired the leader key before
// its engine opens, raises the first and appends (epoch, last+1) to each
// of the second. A log written before replication is epoch 0.
package stream
