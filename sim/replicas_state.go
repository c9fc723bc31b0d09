package sim

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
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
