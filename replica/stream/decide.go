package stream

import "github.com/seckill/seckill/replica"

// The protocol's decisions, pure: the TCP code (primary_conn.go,
// standby.go) and the simulator's replica-set mode (package sim) both
// take them from here, so the simulator steps the same rules the stream
// runs over sockets.

// StaleEpoch reports whether a message of epoch e must be refused by a
// replica that has seen epoch seen: its sender is no longer the primary.
// A standby refuses such a message from its primary, and a primary
// refuses a standby whose hello says it has seen a later epoch than its
// own (StaleEpoch(standby's, primary's) turned around: the primary is the
// stale one).
func StaleEpoch(seen, e uint64) bool {
	if mutantHAAcceptLowerEpoch {
		return false
	}
	return e < seen
}

// CaughtUp reports whether a standby that acknowledged index acked of a
// SKU log may be published in the sync set: it holds every record
// committed (committed: the log's commit index or the highest
// confirmed) and every record the log held when this primary opened it
// (found). The second matters at a tenure's start: those records were
// possibly acknowledged by the former primary, and this one commits
// nothing until a waited standby acknowledges them, so a standby that
// holds none of them would otherwise count as caught up with a commit
// index of 0, be published, and could be promoted without them.
func CaughtUp(acked, committed, found uint64) bool {
	return acked >= max(committed, found)
}

// Copy is what a primary knows, at a standby's hello, of one SKU's copy:
// the standby's log (its epoch history, first and last durable records)
// and its own.
type Copy struct {
	TheirHistory replica.History
	TheirFirst   uint64 // the standby's first record (last+1 when none)
	TheirLast    uint64
	MyHistory    replica.History
	MyFirst      uint64 // the primary's first record (last+1 when none)
	MyLast       uint64
	// Void, when Voided: the primary's log lost records after Void that
	// it shipped (it was opened again after a failure); the copy keeps at
	// most up to it.
	Void   uint64
	Voided bool
	// ForceBase: the copy needs a base copy whatever the logs hold.
	ForceBase bool
	// Snapshot: the primary holds a snapshot (a standby with no record
	// gets a base copy then).
	Snapshot bool
}

// BeginMode is how a copy starts.
type BeginMode byte

const (
	// Resume: the standby's log ends at the index; records follow.
	Resume BeginMode = BeginMode(beginResume)
	// Cut: the standby cuts its log after the index (records the primary
	// does not hold: never committed), then records follow.
	Cut BeginMode = BeginMode(beginCut)
	// Base: a base copy (the newest snapshot, then the log after it).
	Base BeginMode = BeginMode(beginBase)
)

// PlanBegin decides how a copy starts: resume where the standby's log
// ends, cut a tail the primary does not hold (replica.Common over both
// epoch histories), or a base copy when the primary no longer has the
// records the standby needs. index is the last record the standby keeps
// (Resume, Cut); for Base the caller takes the snapshot's index.
func PlanBegin(c Copy) (mode BeginMode, index uint64) {
	common := replica.Common(c.TheirHistory, c.TheirLast, c.MyHistory, c.MyLast)
	if c.Voided {
		common = min(common, c.Void)
	}
	switch {
	case c.ForceBase || common+1 < c.MyFirst || common+1 < c.TheirFirst || (c.TheirLast == 0 && c.Snapshot):
		return Base, 0
	case common < c.TheirLast && mutantHARejoinNoCut:
		return Resume, c.TheirLast
	case common < c.TheirLast:
		return Cut, common
	}
	return Resume, common
}

// SnapshotDue reports whether a primary ships its newest snapshot (at
// newest) to a standby's copy now: the copy began on this connection
// (began), the standby holds no snapshot as new (held: its newest), and
// every record the snapshot covers is sent before it (next: the next
// record to send), so the standby holds them when it truncates its copy.
func SnapshotDue(began bool, newest, held, next uint64) bool {
	return began && newest > held && next > newest
}

// KeepSnapshots is a standby's rule once a new snapshot of its primary's
// is installed beside its copy. Of the SKU's own snapshots it holds
// (held: their indexes, oldest first, the new one among them; a file of
// another SKU is none, snapshot.ListOwn) it keeps the newest
// keep and drops the others (drop), and its copy's log is truncated
// before record before (0: nothing to truncate): the record after the
// oldest snapshot kept, so that each one kept can begin a recovery (one
// that finds the newer damaged falls back to the older, recovery.Plan),
// and never beyond the primary's first record keepFrom: what its feed
// retention and its other standbys hold back, which this copy serves if
// it is promoted.
func KeepSnapshots(held []uint64, keep int, keepFrom uint64) (drop []uint64, before uint64) {
	if len(held) == 0 {
		return nil, 0
	}
	cut := max(len(held)-max(keep, 1), 0)
	oldest := held[cut]
	if mutantHASnapshotPastKept {
		oldest = held[len(held)-1]
	}
	return held[:cut], min(oldest+1, keepFrom)
}

// MayBaseCopy reports whether a primary may begin a base copy of a
// standby's copy, given whether it waits for that standby: not while it
// does. A base copy drops the copy first (BeginBase), and until its
// snapshot is installed the standby holds none of the records it
// acknowledged; a waited standby may be in the sync set, so promoted if
// the primary dies meanwhile, and would lead without them. The stream
// holds such a base copy and reports the standby (NeedsBase); the role
// loop (replica.Node) removes it from the sync set, through the
// coordinator's transaction guarded by its leadership, and then waits
// for it no more, as it does for a dead standby; the base copy then
// begins. The primary owns the rule, not the standby's election: the
// primary alone sees that a copy needs a base copy, and the sync set is
// what every replica's election reads (rule 5 of package replica).
//
// Truncation does not bring it about: a replicated log's snapshot waits
// for the commit index (wal.Log.Await), which waits for every waited
// standby, so the log is never truncated past a waited standby's next
// record, whatever MaxRetainRecords. A waited standby that needs one has
// lost its copy otherwise (its data dir replaced, say, and restarted
// under its name).
func MayBaseCopy(waited bool) bool { return !waited }
