package sim

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// The state check of replica-set mode once logs are truncated behind
// snapshots: a record a snapshot covers is no longer in the log, so a
// replica holds it only if the snapshot's state is the state those
// records make. The reference is the acknowledged records themselves
// (the feed's frames), replayed from record 1 as recovery replays a log.

// ackedLog is the acknowledged frames of one SKU log, 1..last, as a
// recovery.Log.
type ackedLog struct {
	frames map[uint64][]byte
	last   uint64
}

func (l ackedLog) FirstIndex() uint64 { return min(l.last, 1) }
func (l ackedLog) LastIndex() uint64  { return l.last }

func (l ackedLog) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	for i := max(from, 1); i <= l.last; i++ {
		typ, index, payload, err := wal.DecodeFrame(l.frames[i])
		if err == nil && index != i {
			err = fmt.Errorf("frame %d holds index %d", i, index)
		}
		if err != nil {
			return err
		}
		if err := fn(index, typ, payload); err != nil {
			return err
		}
	}
	return nil
}

// ackedState returns the state the acknowledged records 1..index of SKU
// log i make; false when one of them was not acknowledged (the state is
// then unknown to the check).
func (s *rsRun) ackedState(i int, index uint64) (*sku.Machine, bool, error) {
	for j := uint64(1); j <= index; j++ {
		if _, ok := s.acked[i][j]; !ok {
			return nil, false, nil
		}
	}
	m := sku.New()
	if _, err := recovery.Replay(ackedLog{s.acked[i], index}, m, 1); err != nil {
		return nil, false, fmt.Errorf("replay of the acknowledged records 1..%d: %w", index, err)
	}
	return m, true, nil
}

// snapshotsHold checks that each snapshot rep holds of SKU log i whose
// records were all acknowledged is the state they make: the records it
// covers are the acknowledged ones.
func (s *rsRun) snapshotsHold(rep *rsReplica, i int, why string) error {
	k := rep.skus[i]
	files, _ := k.snaps.List()
	for _, f := range files {
		want, ok, err := s.ackedState(i, f.Index)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		_, got, err := k.snaps.Read(f)
		if err != nil {
			return fmt.Errorf("replica %s %s: its snapshot of %s at %d: %w", rep.name, why, k.id, f.Index, err)
		}
		if got.Hash() != want.Hash() {
			return fmt.Errorf("replica %s %s but its snapshot of %s at %d is not the state of the records acknowledged up to it", rep.name, why, k.id, f.Index)
		}
		s.faults["snapshot_checked"]++
	}
	return nil
}

// recoveredHolds checks that the state rep's SKU log i recovers to
// (res: snapshot + log tail, recovery.Plan) is the state of the
// acknowledged records up to its last, when every one of them was.
func (s *rsRun) recoveredHolds(rep *rsReplica, i int, res *recovery.Result) error {
	want, ok, err := s.ackedState(i, res.LastApplied)
	if err != nil || !ok {
		return err
	}
	if res.Machine.Hash() != want.Hash() {
		return fmt.Errorf("replica %s's %s recovers (from snapshot %d and its log) to a state other than the acknowledged records' up to %d",
			rep.name, rep.skus[i].id, res.Base.Index, res.LastApplied)
	}
	s.faults["recovery_checked"]++
	return nil
}

// copiesRecover checks, on every replica that is not a primary, that
// each snapshot it keeps of a SKU log can begin a recovery: its log, as
// a power loss keeps it, holds the record after the snapshot, or none
// after it (a recovery that finds the newest damaged falls back to an
// older one; a copy with no snapshot holds its log from record 1). On
// each replica the sync key names (named), the state recovered from each
// snapshot (the snapshot, then the log's records that are the
// acknowledged ones) must be the state of the acknowledged records up to
// there: what a promotion of that copy would serve.
func (s *rsRun) copiesRecover(named []string) error {
	for _, rep := range s.reps {
		if rep.primary {
			continue
		}
		for i, k := range rep.skus {
			frames := durableFrames(k.dir)
			if len(frames) == 0 {
				continue
			}
			first := uint64(math.MaxUint64)
			for index := range frames {
				first = min(first, index)
			}
			files, _ := k.snaps.List()
			if len(files) == 0 {
				files = []snapshot.File{{}} // recovery from record 1
			}
			for _, f := range files {
				if first > f.Index+1 {
					what := fmt.Sprintf("keeps a snapshot of %s at %d", k.id, f.Index)
					if f.Index == 0 {
						what = "holds no snapshot of " + k.id
					}
					return fmt.Errorf("replica %s %s but its log (as a power loss keeps it) begins at %d: a recovery from it cannot replay the records between", rep.name, what, first)
				}
				if !slices.Contains(named, rep.name) {
					continue
				}
				if err := s.recoversFrom(rep, i, f, frames); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// recoversFrom checks that rep's SKU log i recovered from snapshot f
// (none at index 0) and the acknowledged records its log holds after it
// (frames) is the state of the acknowledged records up to there.
func (s *rsRun) recoversFrom(rep *rsReplica, i int, f snapshot.File, frames map[uint64][]byte) error {
	k := rep.skus[i]
	last := f.Index
	for {
		got, ok := frames[last+1]
		if want, acked := s.acked[i][last+1]; !ok || !acked || !bytes.Equal(got, want) {
			break
		}
		last++
	}
	if last == f.Index {
		return nil // nothing acknowledged to replay: the snapshot alone (snapshotsHold)
	}
	// Checked once per snapshot (its bytes, never changed once put) and
	// end: the acknowledged records do not change either.
	key := recoveredKey{rep: rep.name, sku: i, snapshot: f.Index, last: last}
	if b, ok := k.snaps.Get(f.Index); ok && len(b) > 0 {
		key.bytes = unsafe.SliceData(b)
	}
	if s.recovered[key] {
		return nil
	}
	m := sku.New()
	if f.Index > 0 {
		if _, ok, err := s.ackedHash(i, f.Index); err != nil || !ok {
			return err // a snapshot of records not all acknowledged: its state is unknown here
		}
		var err error
		if _, m, err = k.snaps.Read(f); err != nil {
			return fmt.Errorf("replica %s: its snapshot of %s at %d: %w", rep.name, k.id, f.Index, err)
		}
	}
	if _, err := recovery.Replay(ackedLog{frames, last}, m, f.Index+1); err != nil {
		return fmt.Errorf("replica %s: replay of its copy of %s from %d to %d: %w", rep.name, k.id, f.Index+1, last, err)
	}
	want, ok, err := s.ackedHash(i, last)
	if err != nil || !ok {
		return err
	}
	if m.Hash() != want {
		return fmt.Errorf("replica %s's copy of %s recovers (from snapshot %d and its log to %d) to a state other than the acknowledged records'",
			rep.name, k.id, f.Index, last)
	}
	s.faults["copy_recovery_checked"]++
	s.recovered[key] = true
	return nil
}

// recoveredKey is a recovery recoversFrom checked: a replica's SKU log
// from its snapshot (these bytes) to last.
type recoveredKey struct {
	rep            string
	sku            int
	snapshot, last uint64
	bytes          *byte
}

// ackedHash is the hash of ackedState(i, index), computed once: an index
// is never acknowledged as two records, so it never changes.
func (s *rsRun) ackedHash(i int, index uint64) ([32]byte, bool, error) {
	key := [2]uint64{uint64(i), index}
	if h, ok := s.ackedHashes[key]; ok {
		return h, true, nil
	}
	m, ok, err := s.ackedState(i, index)
	if err != nil || !ok {
		return [32]byte{}, false, err
	}
	h := m.Hash()
	s.ackedHashes[key] = h
	return h, true, nil
}
