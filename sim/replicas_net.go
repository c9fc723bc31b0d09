package sim

import (
	"fmt"
	"slices"

	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/replica/stream"
)

// The simulated network of replica-set mode: connections between a
// primary's stream and its standbys, the messages in flight as values, and
// the faults the seed injects into them (resets, delays, duplicates,
// partitions, a stale tenure's messages replayed).

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
