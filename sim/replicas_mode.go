package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
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

type msgKind uint8

const (
	msgHello msgKind = iota
	msgBegin
	msgRecords
	msgAck
	msgSnapshot // a base copy's snapshot (frames[0], at index; none at 0)
	msgInstall  // a new snapshot of the primary's (frames[0], at index), with keepFrom
)

// rsMsg is one replication message on connection conn; every one carries
// its sender's epoch (a standby's: the highest it has seen).
type rsMsg struct {
	kind     msgKind
	from, to string
	conn     uint64
	epoch    uint64
	at       int64 // ms: when it arrives
	seq      uint64
	sku      int       // begin, records, ack: which SKU log
	hello    []rsHello // hello: the standby's copy of each SKU log
	// begin: the primary's epoch history
	history replica.History
	// begin
	mode   stream.BeginMode
	index  uint64 // begin: the kept index; ack: the durable index; records: the first
	frames [][]byte
	// install: the primary's first record (stream.KeepFrom)
	keepFrom uint64
}

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

// fsync is a replica's group commit (wal.Log.Flush) on each SKU log: a
// primary's batch is shipped to its live copies before it is written; a
// standby acknowledges what became durable (ApplyRecords' waiter).
func (s *rsRun) fsync(rep *rsReplica) error {
	for _, k := range rep.skus {
		if k.log == nil {
			continue
		}
		if err := k.log.Flush(); err != nil {
			return fmt.Errorf("replica %s: group commit of %s: %w", rep.name, k.id, err)
		}
		if rep.primary {
			s.afterInput(rep, k)
		}
	}
	s.commitUp(rep)
	return nil
}

// commitUp confirms to each of a primary's logs what its waited standbys
// hold (replica.Standbys's rule, as Primary.commitLocked: at most what was
// shipped), which releases the shell's replies, and reads the committed
// records as the feed reads them (Log.ReadDurable).
func (s *rsRun) commitUp(rep *rsReplica) {
	if !s.running(rep) || !rep.primary {
		return
	}
	for i, k := range rep.skus {
		index, ok := rep.waits.Commit(k.shipped, func(name string) uint64 {
			if c := rep.copies[name]; c != nil {
				return c.skus[i].acked
			}
			return 0
		})
		if ok && index > k.confirmed {
			k.confirmed = index
			k.log.Confirm(index)
		}
		commit := k.log.CommitIndex()
		if commit <= k.noted {
			continue
		}
		var frame []byte
		_, err := k.log.ReadDurable(k.noted+1, int(commit-k.noted), func(index uint64, typ byte, payload []byte) error {
			frame, _ = wal.AppendFrame(frame[:0], typ, index, payload)
			s.acknowledge(rep, i, index, frame)
			return nil
		})
		if errors.Is(err, wal.ErrCompacted) {
			// Truncated before they were committed (a waited standby
			// fell beyond the log kept for it): a snapshot covers them.
			s.faults["feed_compacted"]++
			k.noted = firstIndex(k.log) - 1
			continue
		}
		if err != nil {
			panic(fmt.Sprintf("replica %s: the feed's read of %s's records %d..%d: %v", rep.name, k.id, k.noted+1, commit, err))
		}
		k.noted = commit
		s.event("%s commits %s through %d", rep.name, k.id, commit)
	}
}

// acknowledge notes a record committed at index of SKU log i: a reply
// rests on it and the feed shows it.
func (s *rsRun) acknowledge(rep *rsReplica, i int, index uint64, frame []byte) {
	acked := s.acked[i]
	if old, ok := acked[index]; ok && !bytes.Equal(old, frame) {
		panic(fmt.Sprintf("index %d of %s acknowledged as two records (the second by %s)", index, rep.skus[i].id, rep.name))
	}
	if _, ok := acked[index]; !ok {
		acked[index] = bytes.Clone(frame)
		s.replies["acknowledged"]++
	}
	if h := rep.skus[i].history; len(h) > 0 && h[len(h)-1].Epoch == rep.holding.Epoch && index >= h[len(h)-1].First {
		e := rep.holding.Epoch
		if o, ok := s.owner[e]; ok && o != rep.name {
			panic(fmt.Sprintf("replicas %s and %s both acknowledged in epoch %d", o, rep.name, e))
		}
		s.owner[e] = rep.name
	}
}

// dial opens a standby's connection to the primary it follows: its hello
// reports each SKU log, every record durable (Standby.hello).
func (s *rsRun) dial(rep *rsReplica) {
	s.connSeq++
	rep.conn, rep.began, rep.installing = s.connSeq, make([]bool, s.nSKUs), make([]bool, s.nSKUs)
	hello := make([]rsHello, s.nSKUs)
	for i, k := range rep.skus {
		if err := k.log.Flush(); err != nil {
			panic(fmt.Sprintf("replica %s: flush its copy of %s: %v", rep.name, k.id, err))
		}
		last := k.log.LastIndex()
		hello[i] = rsHello{history: stream.HelloHistory(k.history, last), first: firstIndex(k.log), last: last}
		if files, _ := k.snaps.List(); len(files) > 0 {
			hello[i].snapshot = files[len(files)-1].Index
		}
	}
	s.send(rsMsg{kind: msgHello, from: rep.name, to: rep.following, conn: rep.conn, epoch: rep.seen, hello: hello})
}

func (s *rsRun) closeConn(rep *rsReplica) {
	if rep.conn != 0 {
		s.breakConn(rep.conn)
	}
}

// breakConn is a connection reset: both ends see it.
func (s *rsRun) breakConn(conn uint64) {
	for _, rep := range s.reps {
		if rep.conn == conn {
			rep.conn, rep.began, rep.installing = 0, nil, nil
		}
		for _, c := range rep.copies {
			if c.conn == conn {
				c.conn, c.connected = 0, false
			}
		}
	}
}

func (s *rsRun) send(m rsMsg) {
	link := [2]string{m.from, m.to}
	s.seq++
	m.seq = s.seq
	m.at = s.now + 1 + int64(s.g.IntN(20)) + s.delay[link]
	if m.kind == msgSnapshot {
		// A snapshot's transfer takes a while: a crash, a power loss or a
		// reset may come while the standby's copy is dropped and the
		// snapshot not yet installed.
		m.at += int64(s.g.IntN(400) + len(m.frames[0])/64)
	}
	// One connection is in order (TCP): nothing overtakes what was sent before.
	for _, o := range s.msgs {
		if o.conn == m.conn && o.from == m.from && o.at > m.at {
			m.at = o.at
		}
	}
	s.msgs = append(s.msgs, m)
	if s.dup[link] > 0 {
		s.dup[link]--
		s.faults["net_duplicate"]++
		d := m
		s.seq++
		d.seq = s.seq
		s.msgs = append(s.msgs, d)
	}
}

// deliver hands every message due to its receiver, in order.
func (s *rsRun) deliver() {
	for {
		slices.SortFunc(s.msgs, func(a, b rsMsg) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return int(a.seq - b.seq)
		})
		i := slices.IndexFunc(s.msgs, func(m rsMsg) bool {
			to := s.byName(m.to)
			return m.at <= s.now && (to == nil || !to.up || s.running(to))
		})
		if i < 0 {
			return
		}
		m := s.msgs[i]
		s.msgs = slices.Delete(s.msgs, i, i+1)
		to := s.byName(m.to)
		if to == nil || !to.up || s.cut[pair(m.from, m.to)] {
			s.breakConn(m.conn)
			continue
		}
		s.receive(to, m)
	}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
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

func (s *rsRun) netFault(target *rsReplica, x uint64) {
	other := s.reps[(x/4)%uint64(len(s.reps))]
	switch x % 8 {
	case 0: // a connection reset
		if target.conn != 0 {
			s.faults["net_reset"]++
			s.breakConn(target.conn)
		}
	case 1: // a slow link for a while (until healed)
		if other != target {
			s.delay[[2]string{target.name, other.name}] = int64(x / 32 % 1500)
			s.faults["net_delay"]++
		}
	case 2:
		if other != target {
			s.dup[[2]string{target.name, other.name}] += 3
		}
	case 3: // partition two replicas
		if other != target {
			s.cut[pair(target.name, other.name)] = true
			s.faults["partition_replicas"]++
			s.resetBetween(target.name, other.name)
		}
	case 4: // partition a replica from the coordinator
		s.etcdCut[target.name] = true
		s.faults["partition_etcd"]++
	case 5, 6: // a message of an earlier tenure replayed on the current connection
		s.replay(target, x)
	default: // heal
		clear(s.cut)
		clear(s.etcdCut)
		clear(s.delay)
		clear(s.dup)
		s.faults["heal"]++
	}
}

func (s *rsRun) resetBetween(a, b string) {
	for _, rep := range s.reps {
		if (rep.name == a && rep.following == b) || (rep.name == b && rep.following == a) {
			s.closeConn(rep)
		}
	}
}

// replay delivers, on a standby's current connection, a message its
// primary's stream sent in an earlier tenure: what the epoch in every
// message is for.
func (s *rsRun) replay(rep *rsReplica, x uint64) {
	if rep.conn == 0 || !slices.Contains(rep.began, true) {
		return
	}
	// A begin does the most harm (a cut): replayed when there is one.
	var old, begins []rsMsg
	for _, m := range rep.archive {
		if m.epoch < rep.seen {
			old = append(old, m)
			if m.kind == msgBegin {
				begins = append(begins, m)
			}
		}
	}
	if len(begins) > 0 && x%4 != 0 {
		old = begins
	}
	if len(old) == 0 {
		return
	}
	m := old[(x/8)%uint64(len(old))]
	m.conn, m.at = rep.conn, s.now
	s.seq++
	m.seq = s.seq
	s.msgs = append(s.msgs, m)
	s.faults["net_stale_replay"]++
}

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
