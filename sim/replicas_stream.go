package sim

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/replica/stream"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// The replication stream of replica-set mode, message by message: the
// standby's hello, the primary's begin (a rejoin cut, a base copy), the
// catch-up from the log's files, the records and their acknowledgements,
// the snapshots shipped, each step taken by the stream package's own
// functions over the replica's simulated disk (simCopy).

// rsHello is what a standby's hello says of one SKU log (durable).
type rsHello struct {
	history     replica.History
	first, last uint64
	snapshot    uint64 // its newest snapshot
}

// rsCopy is a primary's copy to one standby, for its tenure: catching up
// from the log's files until it reaches what the flusher ships, then live
// (each batch shipped as it is written).
type rsCopy struct {
	conn      uint64 // 0: not connected
	lastAck   int64
	connected bool
	skus      []rsCopySKU
}

// rsCopySKU is a copy's state for one SKU log.
type rsCopySKU struct {
	next, acked uint64
	live        bool
	// snapshot is the newest snapshot the standby holds.
	snapshot uint64
	// held: it needs a base copy, held while it is waited for
	// (stream.MayBaseCopy); it has not begun.
	held bool
}

func (s *rsRun) receive(rep *rsReplica, m rsMsg) {
	switch m.kind {
	case msgHello:
		s.hello(rep, m)
	case msgAck:
		c := rep.copies[m.from]
		if !rep.primary || c == nil || c.conn != m.conn {
			return
		}
		if stream.StaleEpoch(m.epoch, rep.holding.Epoch) {
			s.faults["refused_ack"]++
			s.breakConn(m.conn)
			return
		}
		c.skus[m.sku].acked, c.lastAck = m.index, s.now
		s.event("%s: %s acked %s through %d", rep.name, m.from, rep.skus[m.sku].id, m.index)
	case msgBegin, msgRecords, msgSnapshot, msgInstall:
		if rep.conn != m.conn || rep.primary {
			return
		}
		rep.archive = append(rep.archive, m)
		// The standby's rule (Standby.checkEpoch); the EpochFile is rep.seen.
		if err := stream.AcceptEpoch(rep.seen, m.epoch, func(e uint64) error { rep.seen = e; return nil }); err != nil {
			s.faults["refused_stale_epoch"]++
			s.breakConn(m.conn)
			return
		}
		switch m.kind {
		case msgBegin:
			s.begin(rep, m)
		case msgSnapshot:
			s.installBase(rep, m)
		case msgInstall:
			s.installSnapshot(rep, m)
		default:
			s.records(rep, m)
		}
	}
}

// hello: the primary begins a copy of each SKU log as the stream does
// (stream.PlanBegin).
func (s *rsRun) hello(rep *rsReplica, m rsMsg) {
	if !rep.primary {
		s.breakConn(m.conn)
		return
	}
	if stream.StaleEpoch(m.epoch, rep.holding.Epoch) {
		s.faults["refused_standby"]++
		s.breakConn(m.conn)
		return
	}
	if c := rep.copies[m.from]; c != nil && c.conn != 0 {
		s.breakConn(c.conn)
	}
	c := &rsCopy{conn: m.conn, lastAck: s.now, connected: true, skus: make([]rsCopySKU, s.nSKUs)}
	rep.copies[m.from] = c
	for i, k := range rep.skus {
		h := m.hello[i]
		snaps, _ := k.snaps.List()
		mode, index := stream.PlanBegin(stream.Copy{TheirHistory: h.history, TheirFirst: h.first, TheirLast: h.last,
			MyHistory: k.history, MyFirst: firstIndex(k.log), MyLast: k.log.LastIndex(), Snapshot: h.last == 0 && len(snaps) > 0})
		if !s.beginCopy(rep, m.from, c, i, mode, index, h.snapshot) {
			return
		}
	}
	s.catchUp(rep)
}

// beginCopy sends the begin of a standby's copy of SKU log i as the
// primary decided (stream.PlanBegin); a base copy's snapshot follows
// (stream.BaseSnapshot picks it, as Primary.begin). false: the
// connection ended.
func (s *rsRun) beginCopy(rep *rsReplica, name string, c *rsCopy, i int, mode stream.BeginMode, index, theirSnapshot uint64) bool {
	k := rep.skus[i]
	var snap []byte
	switch mode {
	case stream.Cut:
		s.faults["cut"]++
	case stream.Base:
		if !stream.MayBaseCopy(slices.Contains(rep.waits.Waited(), name)) {
			// Dropped from the sync set first (Follower.NeedsBase); the
			// catch-up begins it once it is not waited for.
			if !c.skus[i].held {
				s.faults["base_copy_held"]++
				s.event("%s holds %s's base copy of %s: it is waited for", rep.name, name, k.id)
			}
			c.skus[i] = rsCopySKU{held: true}
			return true
		}
		files, _ := k.snaps.List()
		var err error
		index, snap, err = stream.BaseSnapshot(files, firstIndex(k.log), func(f snapshot.File) ([]byte, error) {
			b, ok := k.snaps.Get(f.Index)
			if !ok {
				return nil, fmt.Errorf("no snapshot at %d", f.Index)
			}
			return b, nil
		})
		if err != nil {
			panic(fmt.Sprintf("replica %s: no base copy of %s possible: %v", rep.name, k.id, err))
		}
		s.faults["base_copy"]++
	}
	s.event("%s begins %s's copy of %s: %v at %d", rep.name, name, k.id, mode, index)
	acked, snapshot := index, theirSnapshot
	switch mode {
	case stream.Base:
		acked, snapshot = 0, index // acked: until it acknowledges the installed copy
	case stream.Cut:
		snapshot = min(theirSnapshot, index) // it removes those beyond the cut
	}
	c.skus[i] = rsCopySKU{next: index + 1, acked: acked, snapshot: snapshot}
	s.send(rsMsg{kind: msgBegin, from: rep.name, to: name, conn: c.conn, epoch: rep.holding.Epoch, sku: i, mode: mode, index: index,
		history: slices.Clone(k.history)})
	if mode == stream.Base {
		s.send(rsMsg{kind: msgSnapshot, from: rep.name, to: name, conn: c.conn, epoch: rep.holding.Epoch, sku: i, index: index,
			frames: [][]byte{snap}})
	}
	return c.conn != 0
}

// catchUp sends each copy that is not live the records it lacks from the
// log's files (stream.ReadFrames, as Primary.catchUp), and makes it live
// once it reaches what the flusher ships.
func (s *rsRun) catchUp(rep *rsReplica) {
	for _, name := range rsNames {
		c := rep.copies[name]
		if c == nil || !c.connected {
			continue
		}
		for i, k := range rep.skus {
			cs := &c.skus[i]
			if cs.held {
				if stream.MayBaseCopy(slices.Contains(rep.waits.Waited(), name)) {
					mode, index := stream.PlanBegin(stream.Copy{ForceBase: true})
					s.beginCopy(rep, name, c, i, mode, index, 0)
				}
				continue
			}
			s.shipSnapshot(rep, name, c, i)
			if cs.live || cs.next > cs.acked+rsSendWindow {
				continue // live, or its send window is full
			}
			var frames [][]byte
			next, err := stream.ReadFrames(k.log, cs.next, 64, func(frame []byte) bool {
				frames = append(frames, bytes.Clone(frame))
				return true
			})
			if errors.Is(err, wal.ErrCompacted) {
				// Truncated behind a snapshot (the standby fell beyond
				// the log kept for it): a base copy, as Primary.catchUp.
				s.faults["catch_up_compacted"]++
				s.event("%s: %s needs %s from %d, the log begins at %d", rep.name, name, k.id, cs.next, firstIndex(k.log))
				mode, index := stream.PlanBegin(stream.Copy{ForceBase: true})
				s.beginCopy(rep, name, c, i, mode, index, 0)
				continue
			}
			if err != nil {
				panic(fmt.Sprintf("replica %s: catch-up read of %s from %d: %v", rep.name, k.id, cs.next, err))
			}
			if len(frames) > 0 {
				s.send(rsMsg{kind: msgRecords, from: rep.name, to: name, conn: c.conn, epoch: rep.holding.Epoch, sku: i, index: cs.next, frames: frames})
			}
			cs.next = next
			cs.live = cs.next == k.shipped+1
		}
	}
}

// shipSnapshot sends SKU log i's newest snapshot to a standby whose copy
// it covers (stream.SnapshotDue, as Primary.shipSnapshot), with the
// primary's first record (stream.KeepFrom): the standby truncates its
// copy as the primary does.
func (s *rsRun) shipSnapshot(rep *rsReplica, name string, c *rsCopy, i int) {
	k, cs := rep.skus[i], &c.skus[i]
	if !stream.SnapshotDue(true, k.snapshot, cs.snapshot, cs.next) {
		return
	}
	files, _ := k.snaps.List()
	index, snap, err := stream.BaseSnapshot(files, 0, func(f snapshot.File) ([]byte, error) {
		b, ok := k.snaps.Get(f.Index)
		if !ok {
			return nil, fmt.Errorf("no snapshot at %d", f.Index)
		}
		return b, nil
	})
	if err != nil || index == 0 || index >= cs.next {
		return // a newer one than announced: its records are on their way
	}
	s.send(rsMsg{kind: msgInstall, from: rep.name, to: name, conn: c.conn, epoch: rep.holding.Epoch, sku: i, index: index,
		keepFrom: stream.KeepFrom(k.log), frames: [][]byte{snap}})
	cs.snapshot = max(cs.snapshot, index)
	s.faults["snapshot_shipped"]++
}

// begin starts a standby's copy of a SKU log as the primary decided,
// through the standby's own code (stream.BeginCopy): a cut with
// wal.CutSegments on the closed log, the check that the copy ends where
// the primary resumes, the primary's epoch history written.
func (s *rsRun) begin(rep *rsReplica, m rsMsg) {
	rep.began[m.sku], rep.installing[m.sku] = false, false
	if m.mode == stream.Base {
		if err := stream.BeginBase(simCopy{s: s, rep: rep, k: rep.skus[m.sku]}, m.history); err != nil {
			panic(fmt.Sprintf("replica %s: begin a base copy of %s: %v", rep.name, rep.skus[m.sku].id, err))
		}
		rep.installing[m.sku] = true
		return
	}
	if err := stream.BeginCopy(simCopy{s: s, rep: rep, k: rep.skus[m.sku]}, m.mode, m.index, m.history); err != nil {
		s.faults["copy_mismatch"]++
		s.breakConn(m.conn)
		return
	}
	rep.began[m.sku] = true
}

// installBase ends a base copy with its snapshot through the standby's
// own code (stream.FinishBase) and acknowledges the installed copy.
func (s *rsRun) installBase(rep *rsReplica, m rsMsg) {
	if !rep.installing[m.sku] {
		s.faults["copy_mismatch"]++ // a snapshot with no base copy begun: a protocol error
		s.breakConn(m.conn)
		return
	}
	rep.installing[m.sku] = false
	k := rep.skus[m.sku]
	if err := stream.FinishBase(simCopy{s: s, rep: rep, k: k, snap: m.frames[0]}, m.index, m.frames[0]); err != nil {
		s.faults["copy_mismatch"]++
		s.breakConn(m.conn)
		return
	}
	s.faults["base_installed"]++
	if err := s.snapshotsHold(rep, m.sku, "installed a base copy"); err != nil {
		panic(err.Error())
	}
	s.event("%s installed a base copy of %s at %d", rep.name, k.id, m.index)
	rep.began[m.sku] = true
	s.send(rsMsg{kind: msgAck, from: rep.name, to: rep.following, conn: rep.conn, epoch: rep.seen, sku: m.sku, index: m.index})
}

// installSnapshot takes a new snapshot of the primary's through the
// standby's own code (stream.InstallSnapshot: checked, installed, the
// older dropped, the copy truncated as stream.KeepSnapshots says).
func (s *rsRun) installSnapshot(rep *rsReplica, m rsMsg) {
	k := rep.skus[m.sku]
	if !rep.began[m.sku] || rep.installing[m.sku] {
		s.faults["copy_mismatch"]++ // a snapshot before the copy began: a protocol error
		s.breakConn(m.conn)
		return
	}
	first := k.log.FirstIndex()
	if err := stream.InstallSnapshot(simCopy{s: s, rep: rep, k: k, snap: m.frames[0]}, m.index, m.keepFrom, m.frames[0]); err != nil {
		s.faults["copy_mismatch"]++
		s.breakConn(m.conn)
		return
	}
	s.faults["snapshot_installed"]++
	if k.log.FirstIndex() > first {
		s.faults["standby_truncated"]++
		k.truncated = true
	}
	s.event("%s installed %s's snapshot of %s at %d, keeps its log from %d", rep.name, m.from, k.id, m.index, k.log.FirstIndex())
}

// simCopy is a standby's copy of a SKU log on its simulated disk, for
// stream.BeginCopy and a base copy (stream.BeginBase, FinishBase); snap
// is the snapshot a base copy received.
type simCopy struct {
	s    *rsRun
	rep  *rsReplica
	k    *rsSKU
	snap []byte
}

func (c simCopy) Log() *wal.Log { return c.k.log }

func (c simCopy) SKU() (string, string) { return campaignID, c.k.id }

func (c simCopy) Cut(index uint64) error {
	if err := c.k.log.Close(); err != nil {
		return err
	}
	if _, err := wal.CutSegments(walName(c.rep, c.k), segmentFiles{c.k.dir}, index, quiet); err != nil {
		panic(fmt.Sprintf("replica %s: cut %s after %d: %v", c.rep.name, c.k.id, index, err))
	}
	files, _ := c.k.snaps.List()
	for _, f := range files {
		if f.Index > index {
			c.k.snaps.Remove(f.Index)
		}
	}
	c.s.openCopy(c.rep, c.k)
	return nil
}

// Drop empties the copy's directory and its snapshots, durably; its log
// is opened again, empty (as a restart would find it).
func (c simCopy) Drop() error {
	if err := c.k.log.Close(); err != nil {
		return err
	}
	c.k.dir.change(func(e map[string]*file) { clear(e) })
	c.k.dir.syncDir()
	c.k.snaps = snapshot.Memory{}
	c.s.openCopy(c.rep, c.k)
	return nil
}

func (c simCopy) Install(index uint64) error {
	c.k.snaps.Put(index, c.snap)
	return nil
}

func (c simCopy) Snapshots() ([]uint64, error) {
	files, _ := c.k.snaps.List()
	indexes := make([]uint64, len(files))
	for i, f := range files {
		indexes[i] = f.Index
	}
	return indexes, nil
}

func (c simCopy) RemoveSnapshots(indexes []uint64) error {
	for _, i := range indexes {
		c.k.snaps.Remove(i)
	}
	return nil
}

// AwaitDurable runs the copy's group commit (the flusher's next round,
// which the TCP standby waits for).
func (c simCopy) AwaitDurable(index uint64) error {
	if c.k.log.DurableIndex() < index {
		if err := c.k.log.Flush(); err != nil {
			return err
		}
	}
	if d := c.k.log.DurableIndex(); d < index {
		return fmt.Errorf("the copy of %s is durable through %d, not %d", c.k.id, d, index)
	}
	return nil
}

// Start makes the directory hold one empty segment named index+1
// (fsynced, as wal.CopyRange writes it) and opens the log over it.
func (c simCopy) Start(index uint64) error {
	if err := c.k.log.Close(); err != nil {
		return err
	}
	c.k.dir.change(func(e map[string]*file) { clear(e) })
	c.k.dir.create(segmentName(index + 1)).sync(false)
	c.k.dir.syncDir()
	c.s.openCopy(c.rep, c.k)
	return nil
}

func (c simCopy) WriteHistory(h replica.History) error {
	c.k.history = slices.Clone(h)
	return nil
}

// records appends a run of the primary's frames to a SKU log's copy
// (stream.ApplyRecords) and acknowledges it once durable; a run out of
// place ends the connection.
func (s *rsRun) records(rep *rsReplica, m rsMsg) {
	if !rep.began[m.sku] {
		s.faults["copy_mismatch"]++ // records before the copy began: a protocol error
		s.breakConn(m.conn)
		return
	}
	conn := rep.conn
	err := stream.ApplyRecords(rep.skus[m.sku].log, m.index, m.frames, func(last uint64, err error) {
		if err == nil && rep.conn == conn {
			s.send(rsMsg{kind: msgAck, from: rep.name, to: rep.following, conn: conn, epoch: rep.seen, sku: m.sku, index: last})
		}
	})
	if err != nil {
		s.faults["copy_mismatch"]++
		s.breakConn(m.conn)
	}
}
