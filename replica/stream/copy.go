package stream

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// The transport-free steps of a copy, on wal.Log values: the TCP code
// (primary_conn.go, standby.go) runs them between its sockets, and the
// simulator's replica-set mode (package sim) between the messages of its
// simulated network, so both copy logs through the same code.

// AcceptEpoch is a standby's rule for the epoch of each message from its
// primary, seen the highest it has seen: a lower epoch is refused
// (ErrStaleEpoch: its sender is no longer the primary); a higher one is
// made durable by raise (the EpochFile) before the message is acted on.
func AcceptEpoch(seen, e uint64, raise func(e uint64) error) error {
	if StaleEpoch(seen, e) {
		return fmt.Errorf("%w: a message of epoch %d, this replica has seen %d", ErrStaleEpoch, e, seen)
	}
	if e > seen {
		return raise(e)
	}
	return nil
}

// ApplyRecords appends a run of the primary's frames to a standby's copy
// of the log, first at first: the same bytes at the same indexes
// (wal.Log.AppendCopy checks each frame's index). A run that does not
// start right after the copy's last record is a protocol error: the
// connection ends and the next one's hello says where the copy ends.
// durable is called once the run is durable (the wal's group commit;
// err: the log failed) with the run's last index: the acknowledgement.
func ApplyRecords(log *wal.Log, first uint64, frames [][]byte, durable func(last uint64, err error)) error {
	if len(frames) == 0 {
		return nil
	}
	if next := log.LastIndex() + 1; first != next {
		return fmt.Errorf("%w: records from %d, the copy's next is %d", errProtocol, first, next)
	}
	var last uint64
	for _, f := range frames {
		i, err := log.AppendCopy(f)
		if err != nil {
			return err
		}
		last = i
	}
	log.Await(last, wal.WaiterFunc(func(err error) { durable(last, err) }))
	return nil
}

// CopyFiles is a standby's copy of one SKU log as the begin of a copy
// changes it: Standby's over its SKU folder, the simulator's over its
// simulated disk.
type CopyFiles interface {
	// Log is the copy's log, open.
	Log() *wal.Log
	// SKU names the SKU whose log this is: a snapshot received for it
	// must be of it (CheckSnapshot).
	SKU() (campaignID, skuID string)
	// Cut removes the records after index: the log closed, cut
	// (wal.CutSegments), opened again; the snapshots beyond index go.
	Cut(index uint64) error
	// WriteHistory replaces the copy's epoch history, durably.
	WriteHistory(h replica.History) error
}

// BeginCopy starts a copy as the primary decided (PlanBegin), but for a
// base copy, which replaces the copy whole: a cut removes the tail the
// primary does not hold (never committed); the copy must then end at
// index, where the primary's records resume (a protocol error ends the
// connection otherwise); its epoch history becomes the primary's.
func BeginCopy(f CopyFiles, mode BeginMode, index uint64, history replica.History) error {
	if mode == Cut {
		if err := f.Cut(index); err != nil {
			return err
		}
	}
	if last := f.Log().LastIndex(); last != index {
		return fmt.Errorf("%w: the primary resumes after record %d, this copy ends at %d", errProtocol, index, last)
	}
	return f.WriteHistory(history)
}

// HelloHistory is the epoch history a standby reports in its hello for a
// copy whose last durable record is last: its history file's entries up
// to last; a log with records and no history was written before
// replication (epoch 0, BeginEpoch's rule).
func HelloHistory(h replica.History, last uint64) replica.History {
	h = h.CutAfter(last)
	if len(h) == 0 && last > 0 {
		h = replica.History{{Epoch: 0, First: 1}}
	}
	return h
}

// NextHistory is the epoch history of a log whose last record is last
// once epoch e begins on it (a primary's tenure): entries beyond last (an
// epoch that began and wrote nothing here) go, and e starts at last+1.
func NextHistory(h replica.History, e, last uint64) replica.History {
	if n := len(h); n > 0 && h[n-1].Epoch == e {
		return h
	}
	return HelloHistory(h, last).Begin(e, last+1)
}

// ReadFrames reads a primary's durable records from from on (at most
// maxRecords, through wal.Log.ReadLocal: durable here, committed or not)
// as frames for a standby's catch-up; add takes each frame (not kept) and
// returns false to stop before it (its message is full). next is the
// first record not taken. wal.ErrCompacted: the records from from on were
// truncated (the standby needs a base copy).
func ReadFrames(log *wal.Log, from uint64, maxRecords int, add func(frame []byte) bool) (next uint64, err error) {
	var frame []byte
	next, err = log.ReadLocal(from, maxRecords, func(index uint64, typ byte, payload []byte) error {
		frame, _ = wal.AppendFrame(frame[:0], typ, index, payload)
		if !add(frame) {
			return errFull
		}
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return next, err
}

// errFull stops a ReadFrames at its message's bound.
var errFull = errors.New("stream: message full")

// BaseFiles is a standby's copy of one SKU log as a base copy replaces
// it: Standby's over its SKU folder, the simulator's over its simulated
// disk.
type BaseFiles interface {
	CopyFiles
	// Drop removes the copy's log and every snapshot of it, durably.
	Drop() error
	// Install puts the snapshot received at index (checked) in place
	// under its name, durably.
	Install(index uint64) error
	// Start makes the copy's log an empty one that goes on at index+1
	// (as seckillctl restore makes it), durably, and opens it.
	Start(index uint64) error
}

// BeginBase begins a base copy, which replaces the copy whole: its log
// and snapshots dropped, its epoch history the primary's. The snapshot
// follows (FinishBase installs it). A crash before FinishBase leaves a
// copy with no record (and no snapshot, or the new one alone): its next
// hello asks for a base copy again (PlanBegin).
func BeginBase(f BaseFiles, history replica.History) error {
	if err := f.Drop(); err != nil {
		return err
	}
	return f.WriteHistory(history)
}

// FinishBase ends a base copy once its snapshot at index arrived whole
// (snap, its bytes; none for a copy from record 1, index 0): the snapshot
// checked and installed, then the copy's log started after it. The copy
// then ends at index, which the standby acknowledges; the primary's
// records follow from index+1.
func FinishBase(f BaseFiles, index uint64, snap []byte) error {
	if index > 0 && !mutantHABaseCopyNoSnapshot {
		campaignID, skuID := f.SKU()
		if err := CheckSnapshot(snap, index, campaignID, skuID); err != nil {
			return err
		}
		if err := f.Install(index); err != nil {
			return err
		}
	}
	if err := f.Start(index); err != nil {
		return err
	}
	if last := f.Log().LastIndex(); last != index {
		return fmt.Errorf("%w: the base copy's log ends at %d, its snapshot is at %d", errProtocol, last, index)
	}
	return nil
}

// CheckSnapshot verifies a snapshot received from the primary (its
// checksum, snapshot.Check) and that it is the one announced: at index,
// of SKU campaignID/skuID, the copy's. One of another SKU would stand for
// the copy's records: a promotion would recover that SKU's state as this
// one's (recovery refuses it, and the copy's log before it is gone).
func CheckSnapshot(b []byte, index uint64, campaignID, skuID string) error {
	h, err := snapshot.Check(b)
	if err != nil {
		return fmt.Errorf("stream: the snapshot received: %w", err)
	}
	if h.Index != index {
		return fmt.Errorf("%w: the snapshot received is at %d, announced at %d", errProtocol, h.Index, index)
	}
	if h.CampaignID != campaignID || h.SKUID != skuID {
		return fmt.Errorf("%w: the snapshot received for %s/%s is of %s/%s", errProtocol, campaignID, skuID, h.CampaignID, h.SKUID)
	}
	return nil
}

// BaseSnapshot picks a base copy's snapshot among a primary's (files,
// oldest first; read returns one's bytes): the newest valid one whose
// next record the log holds (first: the log's first record); index 0 and
// no bytes when there is none and the log begins at record 1 (the copy
// starts from it).
func BaseSnapshot(files []snapshot.File, first uint64, read func(snapshot.File) ([]byte, error)) (uint64, []byte, error) {
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if f.Index+1 < first {
			break
		}
		b, err := read(f)
		if err != nil {
			continue // pruned meanwhile
		}
		if h, err := snapshot.Check(b); err != nil || h.Index != f.Index {
			continue
		}
		return f.Index, b, nil
	}
	if first <= 1 {
		return 0, nil, nil
	}
	return 0, nil, fmt.Errorf("the log begins at record %d and no snapshot reaches it", first)
}

// KeepFrom is what a primary ships with a new snapshot: its log's first
// record (1 for a log with none), the bound of the standby's truncation
// (KeepSnapshots).
func KeepFrom(log *wal.Log) uint64 { return max(log.FirstIndex(), 1) }

// SnapshotFiles is a standby's copy of one SKU log as a new snapshot of
// the primary's changes it: Standby's over its SKU folder, the
// simulator's over its simulated disk.
type SnapshotFiles interface {
	// Log is the copy's log, open.
	Log() *wal.Log
	// SKU names the SKU whose log this is: a snapshot received for it
	// must be of it (CheckSnapshot).
	SKU() (campaignID, skuID string)
	// Install puts the snapshot received at index (checked) in place
	// under its name, durably.
	Install(index uint64) error
	// Snapshots returns the indexes of the SKU's own snapshots held,
	// oldest first (snapshot.ListOwn: a file of another SKU, or whose
	// header does not read, is none of them).
	Snapshots() ([]uint64, error)
	// RemoveSnapshots removes the snapshots at indexes, durably.
	RemoveSnapshots(indexes []uint64) error
	// AwaitDurable returns once the log holds index durably (the wal's
	// group commit), or the log's failure.
	AwaitDurable(index uint64) error
}

// InstallSnapshot takes a new snapshot of the primary's at index (snap,
// its bytes; keepFrom, the primary's first record when it shipped it,
// KeepFrom), of records the copy holds: checked and installed, then the
// older snapshots dropped and the copy's log truncated as KeepSnapshots
// says, so the standby's disk use follows the primary's and a promotion
// replays little.
func InstallSnapshot(f SnapshotFiles, index, keepFrom uint64, snap []byte) error {
	if last := f.Log().LastIndex(); index > last {
		return fmt.Errorf("%w: a snapshot at %d, this copy ends at %d", errProtocol, index, last)
	}
	campaignID, skuID := f.SKU()
	if err := CheckSnapshot(snap, index, campaignID, skuID); err != nil {
		return err
	}
	// Installed only over durable records: a power loss must not leave
	// a snapshot beyond the copy's log, whose next records would then be
	// appended under it (and truncation cuts only durable records).
	if err := f.AwaitDurable(index); err != nil {
		return err
	}
	if err := f.Install(index); err != nil {
		return err
	}
	held, err := f.Snapshots()
	if err != nil {
		return err
	}
	drop, before := KeepSnapshots(held, standbySnapshotKeep, keepFrom)
	if err := f.RemoveSnapshots(drop); err != nil {
		return err
	}
	if before <= 1 {
		return nil
	}
	_, err = f.Log().TruncateBefore(before)
	return err
}
