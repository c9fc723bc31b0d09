package sim

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/seckill/seckill/wal"
)

// Group commit and the commit index in replica-set mode: a replica's
// fsync of its logs, and the primary's commit index raised over its
// standbys' acknowledgements (replica.Standbys.Commit), which releases
// replies and what the feed may read.

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
