package feed

import "time"

// Bounds of the retention (NewRetention): a hold on truncation is never
// unbounded (PostgreSQL's inactive replication slot keeps WAL until the
// disk is full; max_slot_wal_keep_size is the fix this follows).
const (
	// MaxRetainRecords bounds the records retained: ~100 bytes a record,
	// at most ~10 GB of log per SKU.
	MaxRetainRecords = 100_000_000
	// MaxRetainAge bounds the age retained.
	MaxRetainAge = 7 * 24 * time.Hour
	// retainMarks bounds the (time, index) marks a SKU keeps for the age
	// retained, one per truncation: when full, the oldest goes, which
	// only holds truncation back longer.
	retainMarks = 64
)

// retainMark says that the records up to index were appended at or
// before at.
type retainMark struct {
	at    time.Time
	index uint64
}

// Retention holds a SKU's log truncation back for feed consumers that
// fall behind: the owner of the log asks Cut before each truncation. It is
// a pure function of its calls (the time is passed in); one per SKU, not
// safe for concurrent use.
type Retention struct {
	records uint64
	age     time.Duration
	marks   []retainMark // oldest first, at most retainMarks
}

// NewRetention keeps the newest records records of the log and those
// appended within age (0: none of either), each at most its Max bound.
func NewRetention(records uint64, age time.Duration) Retention {
	return Retention{records: min(records, MaxRetainRecords), age: min(age, MaxRetainAge)}
}

// Cut returns the first record to keep, at most need (what the snapshots
// allow): the newest retained records up to durable, and the records
// appended within the retained age before now, stay. last is the log's
// last index at now (durable or not) and lastAt the decision time of that
// record (sku.Machine.LastAt): last is marked for later calls at the later
// of now and lastAt. Every record up to last was appended at or before
// both (a record's decision time is never before the clock that decided
// it), so a wall clock that went back, or a restart, which forgets the
// marks, never shortens the hold.
func (r *Retention) Cut(need, durable, last uint64, now, lastAt time.Time) uint64 {
	if mutantRetention {
		return need
	}
	if r.records > 0 {
		if durable+1 > r.records {
			need = min(need, durable+1-r.records)
		} else {
			need = 1
		}
	}
	if r.age > 0 {
		oldEnough := uint64(0) // records up to it are older than age
		for _, m := range r.marks {
			if !m.at.After(now.Add(-r.age)) {
				oldEnough = m.index
			}
		}
		need = min(need, oldEnough+1)
		if len(r.marks) == retainMarks {
			r.marks = append(r.marks[:0], r.marks[1:]...)
		}
		at := now
		if lastAt.After(at) {
			at = lastAt
		}
		r.marks = append(r.marks, retainMark{at: at, index: last})
	}
	return need
}
