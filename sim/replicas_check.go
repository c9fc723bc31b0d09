package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// The checks of replica-set mode: after every step, that every replica
// the sync key names holds every acknowledged record; at the end, with
// the faults healed, that a primary serves and every log verifies.

// check: every replica the sync key names (the primary and the standbys
// that may lead next) holds every acknowledged record, the same bytes,
// fsynced, at its index: what its disk keeps if the power fails now.
func (s *rsRun) check() error {
	v, err := s.observer.Read(context.Background())
	if err != nil {
		return err
	}
	names := append([]string{v.Sync.Primary}, v.Sync.Standbys...)
	if err := s.copiesRecover(names); err != nil {
		return err
	}
	for _, name := range names {
		rep := s.byName(name)
		if rep == nil {
			continue
		}
		for i := range rep.skus {
			if err := s.holds(rep, i, fmt.Sprintf("may lead next (sync key: primary %q, standbys %q, epoch %d)", v.Sync.Primary, v.Sync.Standbys, v.Sync.Epoch)); err != nil {
				return err
			}
		}
	}
	return nil
}

// holds checks that rep's disk holds every acknowledged record of SKU log
// i, fsynced, or a snapshot that covers it (one at its index or later:
// the log after that snapshot is what recovery replays).
func (s *rsRun) holds(rep *rsReplica, i int, why string) error {
	if len(s.acked[i]) == 0 {
		return nil
	}
	k := rep.skus[i]
	frames := durableFrames(k.dir)
	var covered uint64
	if files, _ := k.snaps.List(); len(files) > 0 {
		covered = files[len(files)-1].Index
	}
	for index, want := range s.acked[i] {
		if index <= covered {
			continue
		}
		if got, ok := frames[index]; !ok || !bytes.Equal(got, want) {
			held := "nothing fsynced"
			if ok {
				held = "another record"
			}
			return fmt.Errorf("replica %s %s but holds %s at index %d of %s, where a record was acknowledged", rep.name, why, held, index, k.id)
		}
	}
	return nil
}

// final heals every fault, lets 20 s pass, and checks that a primary
// leads and its shell releases the reply to a new reservation; then each
// replica's log is recovered and verified as seckillctl verify does.
func (s *rsRun) final() error {
	clear(s.cut)
	clear(s.etcdCut)
	clear(s.delay)
	clear(s.dup)
	for _, rep := range s.reps {
		rep.pauseTo = 0
	}
	for range 200 {
		s.now += 100
		if err := s.settle(); err != nil {
			return err
		}
		for _, rep := range s.reps {
			if k := rep.skus[0]; s.finalCall == nil && s.running(rep) && rep.primary && rep.switchTo == "" && k.sh.Failed() == nil {
				s.finalCall = s.reserve(rep, k)
				s.commitRound(rep, k)
			}
		}
		if s.finalDone {
			return s.verify()
		}
	}
	if s.finalCall == nil {
		return errors.New("no replica leads 20 s after every fault healed")
	}
	return fmt.Errorf("the reply to reservation %s was never released in the 20 s after every fault healed", s.finalCall.RequestID)
}

// verify recovers each replica's logs as a restart would (what its disk
// keeps: the log's fsynced bytes and its snapshots) and verifies them:
// every record replays, the state's audit holds; on each replica the
// sync key names, the recovered state and every snapshot are the states
// the acknowledged records make.
func (s *rsRun) verify() error {
	v, err := s.observer.Read(context.Background())
	if err != nil {
		return err
	}
	for _, rep := range s.reps {
		named := rep.name == v.Sync.Primary || slices.Contains(v.Sync.Standbys, rep.name)
		for i, k := range rep.skus {
			dir := newDirectory()
			for name, f := range k.dir.synced {
				dir.entries[name] = &file{cache: bytes.Clone(f.disk), disk: bytes.Clone(f.disk)}
			}
			dir.syncDir()
			var faults storeFaults
			log, err := wal.OpenOver(walName(rep, k)+"/verify", s.store(dir, &faults), wal.Options{Stepped: true, SegmentSize: segmentSize, Logger: quiet})
			if err != nil {
				return fmt.Errorf("verify %s's %s: %w", rep.name, k.id, err)
			}
			if log.LastIndex() > 0 {
				res, err := recovery.Plan(log, &k.snaps, recovery.Options{CampaignID: campaignID, SKUID: k.id, Verify: true})
				if err != nil {
					return fmt.Errorf("verify %s's %s: %w", rep.name, k.id, err)
				}
				if len(res.Problems) > 0 {
					return fmt.Errorf("verify %s's %s: %v", rep.name, k.id, res.Problems)
				}
				if named {
					if err := s.recoveredHolds(rep, i, res); err != nil {
						return err
					}
				}
			}
			if named {
				if err := s.snapshotsHold(rep, i, "is named by the sync key at the end"); err != nil {
					return err
				}
			}
			log.Close()
		}
	}
	return nil
}
