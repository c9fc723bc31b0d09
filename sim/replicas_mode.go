package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/replica/stream"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Replica-set mode: three replicas of one replica set (--sync-strict in
// a quarter of the seeds), each with the real role loop (replica.Node)
// over the coordinator's in-memory twin (replica.Memory, linearizable, its
// leases expiring by the simulated clock) and its own simulated disk
// (disk.go, store.go: power loss keeps only fsynced bytes, tears the rest).
//
// What runs is the engine's code, the simulator standing in for the
// disk, the network, the clock and seckilld's runner:
//   - each replica's SKU logs (one to three SKUs, by seed) are wal.Logs
//     opened with wal.OpenOver over its disk (torn-tail repair, group
//     commit, fsync), one folder each;
//   - a primary's records are made by the engine's shell (actors/shell)
//     over the SKU core: reservations decided by sku.Machine; its log is
//     Replicated with a Shipper, as stream.Primary makes it, so the shell
//     releases a reply, and the feed reads a record (Log.ReadDurable),
//     only once the commit index covers it: Log.Confirm with the index
//     replica.Standbys.Commit allows over the standbys' acknowledgements;
//     the shell's ticks take its snapshots (every 8-31 records, by seed,
//     on the replica's disk) and truncate the log behind them, held for
//     the standbys connected or waited for (their acknowledged index + 1),
//     bounded by maxRetain records, as stream.Primary holds it;
//   - the stream's steps between the messages: PlanBegin at a hello,
//     StaleEpoch both ways and the standby's AcceptEpoch, CaughtUp, the catch-up read (ReadFrames), the
//     standby's begin (BeginCopy: the rejoin cut through wal.CutSegments,
//     the history written) and apply (ApplyRecords: AppendCopy, the
//     acknowledgement once the wal made the run durable); a base copy
//     when the records a standby needs were truncated (PlanBegin,
//     BaseSnapshot): the standby's copy dropped (BeginBase), the snapshot
//     installed and the log started after it (FinishBase), the snapshot's
//     transfer taking long enough for a crash to come in between; a base
//     copy of a standby the primary waits for held (MayBaseCopy) and the
//     standby reported (Follower.NeedsBase) for the role loop to drop it
//     from the sync set first; a copy with rsSendWindow records sent and
//     not acknowledged catches up from the log's files at the standby's
//     pace, as the stream's bounded send queue makes it;
//   - each snapshot the primary's shell writes shipped to the standbys
//     whose copies it covers (SnapshotDue, KeepFrom), and taken by the
//     standby's own step (InstallSnapshot: checked, installed, the older
//     dropped and the copy truncated as KeepSnapshots says).
//
// The network delivers the stream's messages as values: in order on a
// connection, delayed, duplicated, dropped (a reset), partitioned, and
// replayed from an earlier tenure, by seed. Replicas crash (the page cache
// survives) or lose power (sometimes during a group commit, its batch
// already shipped), pause past their lease (SIGSTOP), have their clocks
// jump, and hand the lead over (a switchover).
//
// Checked after every step, on the real logs: every replica the sync key
// names (the primary and the standbys that may lead next) holds every
// acknowledged record, the same bytes, fsynced at its index, or a
// snapshot at that index or later (a new primary's snapshots, and a base
// copy's, are then the state the acknowledged records make); an index is
// never acknowledged as two records; two replicas never acknowledge
// records in the same epoch; a new primary holds every record the feed
// showed; every replica but the primary can recover from each snapshot
// it keeps (its log holds the record after it), and on those the sync
// key names the state so recovered is the acknowledged records'. At the
// end, with every fault healed, a primary leads and its
// shell releases the reply to a new reservation, and each replica's log,
// recovered as a restart would (snapshot and log), verifies
// (recovery.Plan with Verify), the state of each the sync key names being
// that of the acknowledged records.

const (
	rsSet       = "rs"
	rsTTL       = 2 * time.Second
	rsBound     = time.Second // how long a standby may be dead before it is dropped
	rsTickEvery = 100         // ms between two turns of a replica's role loop
)

var rsNames = []string{"a", "b", "c"}

// rsSendWindow bounds the records sent to a standby and not yet
// acknowledged, as the stream's bounded send queue and TCP's window do:
// beyond it a copy stops being live and catches up from the log's files
// at the standby's pace, so a slow standby can fall behind the log kept
// for it (MaxRetainRecords) and need a base copy while it is waited for.
const rsSendWindow = 4

// The steps of replica-set mode.
const (
	stepRSWrite  stepKind = iota + 32 // clients write to every replica that believes it is the primary
	stepRSFsync                       // a replica's group commit
	stepRSNet                         // a network fault: reset, delay, duplicate, partition, stale replay, heal
	stepRSCrash                       // a replica's process dies (or the machine loses power), restarting later
	stepRSPause                       // a replica is paused (SIGSTOP) for up to twice the lease
	stepRSClock                       // a replica's clock jumps
	stepRSIdle                        // time passes
	stepRSSwitch                      // an operator hands the lead to a caught-up standby (seckillctl ha switchover)
)

var rsStepNames = map[stepKind]string{stepRSWrite: "write", stepRSFsync: "fsync", stepRSNet: "net", stepRSCrash: "crash",
	stepRSPause: "pause", stepRSClock: "clock-jump", stepRSIdle: "idle", stepRSSwitch: "switchover"}

type rsReplica struct {
	name    string
	up      bool
	downTo  int64 // ms: when a dead process restarts
	pauseTo int64 // ms: until when it is paused
	offset  int64 // ms: its clock's error
	coord   *replica.MemoryReplica
	node    *replica.Node
	next    int64 // ms: its next turn
	// seen is the highest epoch seen: the data dir's EpochFile (written
	// atomically and fsynced in seckilld), which survives crashes.
	seen uint64
	// skus are its SKU logs, each on its own folder of the disk.
	skus []*rsSKU
	// primary: since ActPromote
	primary bool
	holding replica.Holding
	waits   *replica.Standbys
	copies  map[string]*rsCopy
	setSync *replica.Action // published at its next turn (the answer takes a while)
	// switchTo is the standby a switchover hands the lead to, paused
	// (it admits nothing) until switchUntil.
	switchTo    string
	switchUntil int64
	// standby
	following string
	conn      uint64
	began     []bool // by SKU: its copy began on this connection
	// installing, by SKU: a base copy began on this connection and waits
	// for its snapshot
	installing []bool
	// archive: messages of the stream it received, replayed by a stale fault
	archive []rsMsg
}

// rsSKU is one SKU log of a replica.
type rsSKU struct {
	id string
	// The disk, which survives crashes: the log's directory, its epoch
	// history (its HistoryFile, written atomically and fsynced in
	// seckilld), the snapshots.
	dir         *directory
	storeFaults storeFaults
	history     replica.History
	snaps       snapshot.Memory
	// The process: log is the standby's copy, or the primary's shell's.
	log    *wal.Log
	sh     *shell.Shell
	exec   rsExecutor
	inputs []logFailure
	// primary
	found    uint64 // the log's last record at the promotion
	snapshot uint64 // the newest snapshot written (shell.Host.SnapshotWritten)
	// truncated: a snapshot shipped to its copy truncated it (since its
	// last promotion)
	truncated bool
	shipped   uint64 // the last record handed to the Shipper (or found)
	confirmed uint64 // the highest index passed to Log.Confirm
	noted     uint64 // the last committed record read as the feed reads it
}

type rsRun struct {
	g        *rand.Rand
	now      int64
	mem      *replica.Memory
	observer *replica.MemoryReplica
	reps     []*rsReplica
	msgs     []rsMsg
	seq      uint64
	connSeq  uint64
	nextID   uint64
	cut      map[[2]string]bool // partitioned pairs of replicas
	etcdCut  map[string]bool    // replicas cut from the coordinator
	delay    map[[2]string]int64
	dup      map[[2]string]int
	nSKUs    int
	// snapshotEvery and maxRetain, by seed: a primary's shell snapshots
	// every so many records, and keeps at most maxRetain records of its
	// log for a standby behind (stream.PrimaryConfig.MaxRetainRecords).
	snapshotEvery, maxRetain uint64
	// snapshotKeep is how many snapshots a primary's shell keeps (its
	// log truncated up to the oldest).
	snapshotKeep int
	acked        []map[uint64][]byte    // by SKU: index → the frame committed there (the feed)
	ackedHashes  map[[2]uint64][32]byte // (SKU, index) → the hash of ackedState
	recovered    map[recoveredKey]bool  // the recoveries copiesRecover checked
	owner        map[uint64]string      // epoch → the replica that acknowledged in it
	faults       map[string]int
	replies      map[string]int
	trace        io.Writer
	// strict is --sync-strict (a quarter of the seeds): the last standby
	// of the sync set is never dropped.
	strict bool
	// finalCall is the reserve the final phase waits for; finalDone once
	// the shell released its reply.
	finalCall *core.Call
	finalDone bool
}

// event writes one line of what happened to the trace (-trace).
func (s *rsRun) event(format string, args ...any) {
	if s.trace != nil {
		fmt.Fprintf(s.trace, "  %d: %s\n", s.now, fmt.Sprintf(format, args...))
	}
}

// RunReplicas runs one replica-set history: deterministic, like Run.
func RunReplicas(o Options) Result {
	history := planReplicas(rand.New(rand.NewPCG(o.Seed, 0x4a)), o.Steps)
	s := newReplicasRun(o)
	if s.strict {
		s.faults["sync_strict"]++
	}
	res := Result{Seed: o.Seed, History: history, Faults: s.faults, Replies: s.replies, Step: -1, Mode: ModeReplicas}
	for i, st := range history {
		if o.Keep != nil && !o.Keep[i] {
			continue
		}
		res.Steps++
		if o.Trace != nil {
			fmt.Fprintf(o.Trace, "step %d: %s\n", i, s.describe(st))
		}
		if res.Err = protectRun(func() error { return s.step(st) }); res.Err != nil {
			res.Step = i
			return res
		}
	}
	res.Step = len(history)
	res.Err = protectRun(s.final)
	return res
}

// newReplicasRun starts the three replicas of a history on an empty
// coordinator and empty disks.
func newReplicasRun(o Options) *rsRun {
	s := &rsRun{g: rand.New(rand.NewPCG(o.Seed, 0x4b)), now: startMs, cut: map[[2]string]bool{}, etcdCut: map[string]bool{},
		delay: map[[2]string]int64{}, dup: map[[2]string]int{}, owner: map[uint64]string{},
		faults: map[string]int{}, replies: map[string]int{}, ackedHashes: map[[2]uint64][32]byte{}, recovered: map[recoveredKey]bool{}, trace: o.Trace, strict: o.Seed%4 == 0, nSKUs: 1 + int(o.Seed/4%3),
		snapshotEvery: 8 + o.Seed/12%24, maxRetain: 16 + o.Seed/7%48, snapshotKeep: snapshotKeep}
	if o.Seed%3 == 1 {
		// A short retention and one snapshot kept (the log truncated up
		// to the newest): a standby the primary waits for falls beyond it
		// within the bound (or, strict, while it is the last one), and
		// needs a base copy while it may be in the sync set.
		s.snapshotEvery, s.maxRetain, s.snapshotKeep = 4+o.Seed/12%8, 2+o.Seed/7%6, 1
	}
	s.mem = replica.NewMemory(func() time.Time { return time.UnixMilli(s.now) })
	s.observer = s.mem.Replica(rsSet, "observer", rsTTL)
	for range s.nSKUs {
		s.acked = append(s.acked, map[uint64][]byte{})
	}
	for _, name := range rsNames {
		rep := &rsReplica{name: name}
		for k := range s.nSKUs {
			rep.skus = append(rep.skus, &rsSKU{id: fmt.Sprintf("sku%d", k), dir: newDirectory()})
		}
		s.reps = append(s.reps, rep)
		s.start(rep)
	}
	return s
}

// planReplicas draws a replica-set history of n steps.
func planReplicas(g *rand.Rand, n int) []step {
	kinds := []stepKind{stepRSWrite, stepRSFsync, stepRSNet, stepRSCrash, stepRSPause, stepRSClock, stepRSIdle, stepRSSwitch}
	steps := make([]step, n)
	for i := range steps {
		k := kinds[weighted(g, 40, 15, 14, 5, 3, 2, 21, 2)]
		steps[i] = step{kind: k, dt: int64(g.IntN(250)), x: g.Uint64()}
	}
	return steps
}

func (s *rsRun) describe(st step) string {
	return fmt.Sprintf("+%dms %s x=%d", st.dt, rsStepNames[st.kind], st.x%1000)
}

// start is a process start: a standby until its role loop says
// otherwise, its copy of the log opened (the torn tail repaired).
func (s *rsRun) start(rep *rsReplica) {
	rep.up = true
	rep.coord = s.mem.Replica(rsSet, rep.name, rsTTL)
	rep.node = replica.NewNode(rep.name, s.strict, rsBound)
	rep.primary, rep.copies, rep.waits, rep.setSync = false, nil, nil, nil
	rep.following, rep.conn, rep.began, rep.installing = "", 0, nil, nil
	rep.next = s.now
	for _, k := range rep.skus {
		k.sh, k.exec, k.inputs, k.storeFaults = nil, rsExecutor{}, nil, storeFaults{}
		s.openCopy(rep, k)
	}
}

func (s *rsRun) clock(rep *rsReplica) time.Time { return time.UnixMilli(s.now + rep.offset) }

func (s *rsRun) byName(name string) *rsReplica {
	for _, rep := range s.reps {
		if rep.name == name {
			return rep
		}
	}
	return nil
}

// running: its process runs now (up and not paused).
func (s *rsRun) running(rep *rsReplica) bool { return rep.up && s.now >= rep.pauseTo }

func (s *rsRun) step(st step) error {
	x := st.x
	target := s.reps[x%uint64(len(s.reps))]
	x /= 8
	s.now += st.dt
	switch st.kind {
	case stepRSWrite:
		for _, rep := range s.reps {
			if s.running(rep) && rep.primary && rep.switchTo == "" {
				k := rep.skus[x/4%uint64(s.nSKUs)]
				for range 1 + x%3 {
					s.reserve(rep, k)
				}
				s.commitRound(rep, k)
				s.faults["writes"]++
			}
		}
	case stepRSFsync:
		if s.running(target) {
			if err := s.fsync(target); err != nil {
				return err
			}
		}
	case stepRSNet:
		s.netFault(target, x)
	case stepRSCrash:
		if target.up {
			s.crash(target, x%3 == 0, x/4%2 == 0)
			target.downTo = s.now + 300 + int64(x/4%3000)
		}
	case stepRSPause:
		if s.running(target) {
			target.pauseTo = s.now + 500 + int64(x%uint64(2*rsTTL/time.Millisecond))
			s.faults["pause"]++
		}
	case stepRSClock:
		jump := int64(x%4000) - 2000
		target.offset += jump
		s.faults["clock_jump"]++
	case stepRSSwitch:
		s.askSwitchover(x)
	}
	return s.settle()
}

// reserve is a client's reservation on a primary's shell: decided by the
// SKU core (sku.Machine), recorded at the round's Commit.
func (s *rsRun) reserve(rep *rsReplica, k *rsSKU) *core.Call {
	s.nextID++
	c := &core.Call{Kind: core.KindReserve, RequestID: fmt.Sprintf("r%d", s.nextID), UserID: fmt.Sprintf("u%d", s.nextID)}
	k.sh.Decide(s.clock(rep), c)
	return c
}

// commitRound ends a primary shell's round: its records go to the log's
// pending batch (shipped and written at the next group commit).
func (s *rsRun) commitRound(rep *rsReplica, k *rsSKU) {
	k.sh.Commit(s.clock(rep))
	s.afterInput(rep, k)
}

// afterInput brings back to a primary's shell the log failures its
// releases reported.
func (s *rsRun) afterInput(rep *rsReplica, k *rsSKU) {
	if k.sh == nil {
		return
	}
	for len(k.inputs) > 0 {
		in := k.inputs[0]
		k.inputs = k.inputs[1:]
		k.sh.LogFailed(s.clock(rep), in.log, in.err)
		s.faults["log_failed"]++
	}
	k.log = k.sh.Log()
}

// settle runs what the time reached: restarts, deliveries, commits and
// the replicas' turns; then the checks.
func (s *rsRun) settle() error {
	for _, rep := range s.reps {
		if !rep.up && s.now >= rep.downTo {
			s.start(rep)
		}
	}
	s.deliver()
	for _, rep := range s.reps {
		s.commitUp(rep)
	}
	for _, rep := range s.reps {
		if s.running(rep) && s.now >= rep.next {
			rep.next = s.now + rsTickEvery
			if err := s.turn(rep); err != nil {
				return err
			}
		}
	}
	for _, rep := range s.reps {
		s.commitUp(rep)
	}
	return s.check()
}

// turn is one turn of a replica's runner: its keep-alive, the answer of a
// coordinator call in flight, Lost, its group commit, a primary's
// catch-up reads and jobs, a standby's redial, and the role loop's tick.
func (s *rsRun) turn(rep *rsReplica) error {
	if !s.etcdCut[rep.name] {
		rep.coord.KeepAlive()
	}
	s.mem.Expire()
	if err := s.fsync(rep); err != nil {
		return err
	}
	if a := rep.setSync; a != nil {
		rep.setSync = nil
		var err error
		if s.etcdCut[rep.name] {
			err = errEtcdCut
		} else {
			_, err = rep.coord.SetSync(context.Background(), a.Holding, a.Standbys)
		}
		s.event("%s set-sync %q: %v", rep.name, a.Standbys, err)
		if err := s.perform(rep, rep.node.Published(err)); err != nil {
			return err
		}
	}
	if rep.primary {
		select {
		case <-rep.coord.Lost(rep.holding):
			s.faults["lost"]++
			if err := s.perform(rep, rep.node.Lost(rep.holding)); err != nil {
				return err
			}
		default:
		}
	}
	if rep.primary && rep.switchTo != "" {
		if err := s.switchover(rep); err != nil {
			return err
		}
	}
	if rep.primary {
		for _, k := range rep.skus {
			k.sh.Tick(s.clock(rep)) // its timers: a snapshot due
			s.afterInput(rep, k)
			s.runJobs(rep, k)
			s.afterInput(rep, k)
		}
		s.catchUp(rep)
	}
	if rep.node.Role() == replica.Standby && rep.following != "" && rep.conn == 0 {
		s.dial(rep)
	}
	return s.perform(rep, rep.node.Tick(s.clock(rep), s.followers(rep)))
}

var errEtcdCut = errors.New("sim: cut from the coordinator")

func (s *rsRun) followers(rep *rsReplica) []replica.Follower {
	if !rep.primary {
		return nil
	}
	var out []replica.Follower
	for _, name := range rsNames {
		c := rep.copies[name]
		if c == nil {
			continue
		}
		f := replica.Follower{Name: name, Connected: c.connected, CaughtUp: c.connected, LastAck: time.UnixMilli(c.lastAck + rep.offset)}
		for i, k := range rep.skus {
			cs := c.skus[i]
			f.NeedsBase = f.NeedsBase || (c.connected && cs.held)
			f.CaughtUp = f.CaughtUp && !cs.held && stream.CaughtUp(cs.acked, max(k.confirmed, k.log.CommitIndex()), k.found)
			f.LagRecords += k.shipped - min(cs.acked, k.shipped)
		}
		out = append(out, f)
	}
	return out
}

// perform runs a Node's actions as seckilld's runner does.
func (s *rsRun) perform(rep *rsReplica, actions []replica.Action) error {
	for _, a := range actions {
		switch a.Kind {
		case replica.ActRead:
			if s.etcdCut[rep.name] {
				if err := s.perform(rep, rep.node.Viewed(replica.View{}, errEtcdCut)); err != nil {
					return err
				}
				continue
			}
			v, err := rep.coord.Read(context.Background())
			if err := s.perform(rep, rep.node.Viewed(v, err)); err != nil {
				return err
			}
		case replica.ActAcquire:
			if s.etcdCut[rep.name] {
				if err := s.perform(rep, rep.node.Acquired(s.clock(rep), replica.Holding{}, errEtcdCut)); err != nil {
					return err
				}
				continue
			}
			h, err := rep.coord.Acquire(context.Background(), a.View)
			if err == nil {
				s.faults["acquire"]++
			}
			if err := s.perform(rep, rep.node.Acquired(s.clock(rep), h, err)); err != nil {
				return err
			}
		case replica.ActPromote:
			if err := s.promote(rep, a); err != nil {
				return err
			}
		case replica.ActDemote:
			s.faults["demote"]++
			s.demote(rep)
		case replica.ActSetSync:
			a := a
			rep.setSync = &a
		case replica.ActWait:
			if rep.primary {
				s.event("%s waits for %q", rep.name, a.Standbys)
				rep.waits = replica.NewStandbys(a.Standbys, s.strict)
			}
		case replica.ActFollow:
			s.closeConn(rep)
			rep.following = a.Primary
			s.event("%s follows %s", rep.name, a.Primary)
			if p := s.byName(a.Primary); p == nil || !p.up {
				rep.node.FollowFailed()
				rep.following = ""
				continue
			}
			s.dial(rep)
		}
	}
	return nil
}
