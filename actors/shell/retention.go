package shell

import "time"

// Bounds of the feed retention (Config.FeedRetainRecords, FeedRetainAge):
// a hold on truncation is never unbounded (PostgreSQL's inactive
// replication slot keeps WAL until the disk is full;
// max_slot_wal_keep_size is the fix this follows).
const (
	// MaxFeedRetainRecords bounds FeedRetainRecords: ~100 bytes a record,
	// at most ~10 GB of log per SKU.
	MaxFeedRetainRecords = 100_000_000
	// MaxFeedRetainAge bounds FeedRetainAge.
	MaxFeedRetainAge = 7 * 24 * time.Hour
	// feedRetainMarks bounds the (time, index) marks a SKU keeps for
	// FeedRetainAge, one per truncation: when full, the oldest goes,
	// which only holds truncation back longer.
	feedRetainMarks = 64
)

// retainMark says that the records up to index were appended at or
// before at.
type retainMark struct {
	at    time.Time
	index uint64
}

// retention holds a SKU's log truncation back for feed consumers.
type retention struct {
	records uint64
	age     time.Duration
	marks   []retainMark // oldest first, at most feedRetainMarks
}

func newRetention(records uint64, age time.Duration) retention {
	return retention{records: min(records, MaxFeedRetainRecords), age: min(age, MaxFeedRetainAge)}
}

// cut returns the first record to keep, at most need (what the snapshots
// allow): the newest FeedRetainRecords records up to durable, and the
// records appended within FeedRetainAge before now, stay. last is the
// log's last index at now (durable or not) and lastAt the decision time
// of that record (sku.Machine.LastAt): last is marked for later calls at
// the later of now and lastAt. Every record up to last was appended at or
// before both (a record's decision time is never before the clock that
// decided it), so a wall clock that went back, or a restart, which
// forgets the marks, never shortens the hold.
func (r *retention) cut(need, durable, last uint64, now, lastAt time.Time) uint64 {
	if mutantFeedRetention {
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
		if len(r.marks) == feedRetainMarks {
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
