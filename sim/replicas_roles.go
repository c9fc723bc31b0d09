package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/replica/stream"
)

// A replica's role changes in replica-set mode, as the role loop
// (replica.Node) asks for them: promotion (a new epoch over the SKU
// logs), demotion, a crash or power loss and its restart, and an
// operator's switchover.

// promote is seckilld's promotion: the epoch raised on disk (refusing a
// lower one), each SKU log's epoch history begun at its end (BeginEpoch),
// its copy closed and the engine's shell opened over the same log,
// Replicated, recovering the SKU from it; a log with no definition gets
// one.
func (s *rsRun) promote(rep *rsReplica, a replica.Action) error {
	s.closeConn(rep)
	rep.following = ""
	if stream.StaleEpoch(rep.seen, a.Holding.Epoch) {
		panic(fmt.Sprintf("replica %s promoted at epoch %d after seeing %d", rep.name, a.Holding.Epoch, rep.seen))
	}
	rep.seen = a.Holding.Epoch
	rep.primary, rep.holding = true, a.Holding
	rep.waits = replica.NewStandbys(a.Standbys, s.strict)
	rep.copies = map[string]*rsCopy{}
	s.faults["promote"]++
	for i, k := range rep.skus {
		if err := k.log.Close(); err != nil {
			return fmt.Errorf("replica %s: close its copy of %s: %w", rep.name, k.id, err)
		}
		k.history = stream.NextHistory(k.history, a.Holding.Epoch, k.log.LastIndex())
		k.sh = shell.New(s.shellConfig(rep, k))
		if err := k.sh.Recover(s.clock(rep)); err != nil {
			return fmt.Errorf("replica %s: recovery of %s at its promotion: %w", rep.name, k.id, err)
		}
		k.log = k.sh.Log()
		k.found, k.shipped, k.confirmed, k.noted = k.log.LastIndex(), k.log.LastIndex(), 0, firstIndex(k.log)-1
		k.snapshot = 0
		if files, _ := k.snaps.List(); len(files) > 0 {
			k.snapshot = files[len(files)-1].Index
		}
		if k.truncated {
			s.faults["promoted_truncated_copy"]++ // a copy a shipped snapshot truncated
			k.truncated = false
		}
		s.event("%s promoted, epoch %d, waits for %q, %s's log %d (durable %d)", rep.name, a.Holding.Epoch, a.Standbys, k.id, k.log.LastIndex(), k.log.DurableIndex())
		// The feed showed every record acknowledged: the new primary holds
		// each of them, the same bytes at the same index.
		if err := s.holds(rep, i, fmt.Sprintf("leads epoch %d", a.Holding.Epoch)); err != nil {
			return err
		}
		if err := s.snapshotsHold(rep, i, fmt.Sprintf("leads epoch %d", a.Holding.Epoch)); err != nil {
			return err
		}
		if k.sh.View().Definition.SKUID == "" {
			def := sku.Definition{CampaignID: campaignID, SKUID: k.id, StartAt: startMs, EndAt: startMs + 3_600_000,
				PaymentWindowMs: 3_600_000, SaleLimit: 1_000_000}
			k.sh.Decide(s.clock(rep), &core.Call{Kind: core.KindDefine, Def: &def})
			s.commitRound(rep, k)
		}
	}
	return nil
}

// demote is seckilld's demotion: the engine closes (its pending records
// written, uncommitted) and the replica copies again.
func (s *rsRun) demote(rep *rsReplica) {
	if !rep.primary {
		return
	}
	s.event("%s demoted", rep.name)
	for _, c := range rep.copies {
		if c.conn != 0 {
			s.breakConn(c.conn)
		}
	}
	rep.primary, rep.holding, rep.waits, rep.copies, rep.setSync, rep.switchTo = false, replica.Holding{}, nil, nil, nil, ""
	for _, k := range rep.skus {
		k.sh.Stop()
		k.sh, k.exec, k.inputs = nil, rsExecutor{}, nil
		s.openCopy(rep, k)
	}
}

// crash ends a replica's process: what it had not handed to the disk is
// gone; the page cache reaches the disk, unless the power is lost too,
// then sometimes during a group commit: its batch shipped to the standbys
// and written, its fsync never done (a torn tail here, records a standby
// may hold and this log lost).
func (s *rsRun) crash(rep *rsReplica, power, inSync bool) {
	for _, k := range rep.skus {
		if power && inSync && k.log.LastIndex() > k.log.DurableIndex() {
			k.storeFaults.crashInSync = true
			if err := k.log.Flush(); err == nil {
				panic("a group commit whose fsync failed returned no error")
			}
			s.faults["power_loss_in_fsync"]++
		}
	}
	if slices.Contains(rep.installing, true) {
		s.faults["crash_mid_install"]++ // its copy dropped, the snapshot not yet installed
	}
	for _, c := range rep.copies {
		if c.conn != 0 {
			s.breakConn(c.conn)
		}
	}
	s.closeConn(rep)
	rep.primary, rep.holding, rep.waits, rep.copies, rep.setSync, rep.switchTo = false, replica.Holding{}, nil, nil, nil, ""
	rep.up = false
	s.event("%s crashed (power loss: %v)", rep.name, power)
	if power {
		s.faults["power_loss"]++
	} else {
		s.faults["crash"]++
	}
	for _, k := range rep.skus {
		k.sh, k.log, k.exec, k.inputs = nil, nil, rsExecutor{}, nil // no Stop, no Close: the process died
		if power {
			k.dir.crash(s.g, s.faults)
			continue
		}
		for _, f := range k.dir.entries {
			f.sync(false)
		}
		k.dir.syncDir()
	}
}

// askSwitchover asks the running primary, if any, to hand the lead to a
// standby it follows connected and caught up (seckilld refuses others).
func (s *rsRun) askSwitchover(x uint64) {
	for _, rep := range s.reps {
		if !s.running(rep) || !rep.primary || rep.switchTo != "" {
			continue
		}
		var ready []string
		for _, f := range s.followers(rep) {
			if f.Connected && f.CaughtUp {
				ready = append(ready, f.Name)
			}
		}
		if len(ready) == 0 {
			s.faults["switchover_refused"]++
			return
		}
		rep.switchTo, rep.switchUntil = ready[x%uint64(len(ready))], s.now+5000
		s.event("%s hands the lead to %s", rep.name, rep.switchTo)
		return
	}
}

// switchover is a paused primary's turn in a switchover (seckilld's
// switchover.go): once the target acknowledged every record shipped, the
// leader key is released naming it alone as the next leader and this
// replica leads no more; after 5 s without that, it serves on.
func (s *rsRun) switchover(rep *rsReplica) error {
	pending := false
	for _, k := range rep.skus {
		pending = pending || k.log.LastIndex() != k.shipped
	}
	for _, f := range s.followers(rep) {
		if f.Name != rep.switchTo || !f.Connected || !f.CaughtUp || f.LagRecords > 0 || pending {
			continue
		}
		var err error
		if s.etcdCut[rep.name] {
			err = errEtcdCut
		} else {
			err = rep.coord.Release(context.Background(), rep.holding, []string{rep.switchTo})
		}
		if err != nil && !errors.Is(err, replica.ErrNotLeader) {
			break // serves on once the time is out
		}
		s.faults["switchover"]++
		s.event("%s released the lead to %s", rep.name, rep.switchTo)
		rep.switchTo = ""
		return s.perform(rep, rep.node.Lost(rep.holding))
	}
	if s.now >= rep.switchUntil {
		s.faults["switchover_aborted"]++
		rep.switchTo = ""
	}
	return nil
}
