package stream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// A standby serves reads of committed records. The primary sends each
// SKU's commit index (msgCommit) after the begin of the copy on the
// connection; the standby applies its copy to a sku.Machine of its own up
// to min(commit index, its copy's durable index), never beyond: a record
// above the commit index may still be cut at a rejoin, and a reply built
// from it could show a client a reservation that later vanishes. A commit
// index once heard stays true across connections and primaries (a
// committed record is on every replica that may be promoted), so a
// standby keeps what it applied.

// ErrNotApplied: the standby's applied state cannot answer (the SKU is
// not copied here, or none of its records is applied yet, or the record
// asked for is not among those applied). The primary may know more.
var ErrNotApplied = errors.New("stream: not among the committed records applied on this standby")

// applyChunk bounds the records applied under a SKU's read lock at once,
// so a read waits for at most this many.
const applyChunk = 4096

// Bounds of the frames the copies keep in memory for the applier, from
// their append until they are applied (about one round trip to the
// primary's commit index): records per copy, bytes over every copy of
// the standby. A copy that would pass them drops what it kept and its
// applier reads the log's files.
const (
	pendingMaxRecords = 1 << 16
	pendingMaxBytes   = 64 << 20
)

// committedState is a standby's state of one SKU up to a commit index.
type committedState struct {
	mu sync.Mutex
	m  *sku.Machine // nil until built (recovery.Plan), or after a reset
	// applied is the last record applied to m (0 without m), changed
	// under mu; commit, the highest commit index the primary sent. Both
	// are read without mu by noteCommit, which never waits for an apply.
	applied, commit atomic.Uint64

	// pending are the frames appended to the copy and not applied yet,
	// consecutive indexes, copied: the applier takes them instead of
	// reading them back from the log's files. Guarded by pmu (the session
	// goroutine adds them while the applier holds mu).
	pmu          sync.Mutex
	pending      []pendingFrame
	pendingBytes int
	// total is the bytes kept by every copy of the standby.
	total *atomic.Int64
}

type pendingFrame struct {
	index uint64
	frame []byte
}

// keep copies a batch of frames appended to the copy from index first
// (one allocation for the batch). Frames that do not follow the last kept
// one, or beyond the bounds, make it drop what it kept: the applier then
// reads the log's files.
func (c *committedState) keep(first uint64, frames [][]byte) {
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	n := len(c.pending)
	if (n > 0 && c.pending[n-1].index+1 != first) || n+len(frames) > pendingMaxRecords || c.total.Load()+int64(size) > pendingMaxBytes {
		c.dropPendingLocked()
		if len(frames) > pendingMaxRecords || c.total.Load()+int64(size) > pendingMaxBytes {
			return
		}
	}
	buf := make([]byte, 0, size)
	for i, f := range frames {
		at := len(buf)
		buf = append(buf, f...)
		c.pending = append(c.pending, pendingFrame{index: first + uint64(i), frame: buf[at:len(buf):len(buf)]})
	}
	c.pendingBytes += size
	c.total.Add(int64(size))
}

// takePending returns the kept frames from index from through until, if
// the first kept one is from (nil otherwise), and forgets those before.
func (c *committedState) takePending(from, until uint64) []pendingFrame {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	i, freed := 0, 0
	for i < len(c.pending) && c.pending[i].index < from {
		freed += len(c.pending[i].frame)
		i++
	}
	c.pending = c.pending[i:]
	defer func() { c.pendingBytes -= freed; c.total.Add(-int64(freed)) }()
	if len(c.pending) == 0 || c.pending[0].index != from {
		return nil
	}
	n := 0
	for n < len(c.pending) && c.pending[n].index <= until {
		freed += len(c.pending[n].frame)
		n++
	}
	out := c.pending[:n:n]
	c.pending = c.pending[n:]
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return out
}

func (c *committedState) dropPendingLocked() {
	c.total.Add(-int64(c.pendingBytes))
	c.pending, c.pendingBytes = nil, 0
}

// noteCommit records a commit index heard from the primary, and reports
// whether a chunk of committed records (applyChunk) waits to be applied.
func (c *committedState) noteCommit(index uint64) (due bool) {
	for {
		old := c.commit.Load()
		if index <= old || c.commit.CompareAndSwap(old, index) {
			break
		}
	}
	return c.commit.Load() >= c.applied.Load()+applyChunk
}

// reset drops the applied state: the copy's log was replaced (a base
// copy) or cut; it is built again from the copy at the next apply. The
// commit index heard stays.
func (c *committedState) reset() {
	c.mu.Lock()
	c.m = nil
	c.applied.Store(0)
	c.mu.Unlock()
	c.pmu.Lock()
	c.dropPendingLocked()
	c.pmu.Unlock()
}

// cutAfter drops the applied state if it holds records after index (a
// cut only removes records above every commit index, so this is a
// primary's fault, not a rule: the state is then built again).
func (c *committedState) cutAfter(index uint64) {
	c.mu.Lock()
	if c.m != nil && c.applied.Load() > index {
		c.m = nil
		c.applied.Store(0)
	}
	for {
		old := c.commit.Load()
		if old <= index || c.commit.CompareAndSwap(old, index) {
			break
		}
	}
	c.mu.Unlock()
	c.pmu.Lock()
	c.dropPendingLocked()
	c.pmu.Unlock()
}

// Applied returns the commit index the standby applied a SKU's copy up
// to (0: none).
func (s *Standby) Applied(campaignID, skuID string) uint64 {
	x := s.lookupSKU(skuKey{campaignID, skuID})
	if x == nil {
		return 0
	}
	s.apply(x)
	x.reads.mu.Lock()
	defer x.reads.mu.Unlock()
	if x.reads.m == nil {
		return 0
	}
	return x.reads.applied.Load()
}

// Get returns reservation id as the committed records applied on this
// standby show it, and the index they reach.
func (s *Standby) Get(id string) (sku.View, uint64, error) {
	campaignID, skuID, cell, seq, tag, err := sku.ParseCellReservationID(id)
	if err != nil {
		return sku.View{}, 0, ErrNotApplied
	}
	var v sku.View
	found := false
	applied, err := s.read(skuKey{campaignID, skuID}, func(m *sku.Machine) {
		if m.Issued(cell, seq, tag) {
			v, found = m.Get(seq)
		}
	})
	if err == nil && !found {
		err = ErrNotApplied
	}
	return v, applied, err
}

// Lookup returns the answer request_id got on a SKU as the committed
// records applied on this standby show it, and the index they reach.
func (s *Standby) Lookup(campaignID, skuID, requestID string) (sku.Result, uint64, error) {
	var res sku.Result
	found := false
	applied, err := s.read(skuKey{campaignID, skuID}, func(m *sku.Machine) { res, found = m.Lookup(requestID) })
	if err == nil && !found {
		err = ErrNotApplied
	}
	return res, applied, err
}

// read applies the SKU's copy up to its commit index, then runs fn on
// the applied state under its lock.
func (s *Standby) read(k skuKey, fn func(m *sku.Machine)) (uint64, error) {
	s.mu.Lock()
	x, closed := s.skus[k], s.closed
	s.mu.Unlock()
	if x == nil || closed {
		return 0, ErrNotApplied
	}
	s.apply(x)
	x.reads.mu.Lock()
	defer x.reads.mu.Unlock()
	if x.reads.m == nil {
		return 0, ErrNotApplied
	}
	fn(x.reads.m)
	return x.reads.applied.Load(), nil
}

func (s *Standby) lookupSKU(k skuKey) *standbySKU {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skus[k]
}

// wakeApplier asks the applier to apply x (a chunk of committed records
// waits). It never waits: x joins a set bounded by the SKUs.
func (s *Standby) wakeApplier(x *standbySKU) {
	s.applyMu.Lock()
	s.applyDue[x] = struct{}{}
	s.applyMu.Unlock()
	select {
	case s.applyWake <- struct{}{}:
	default:
	}
}

// applier applies, until Close, the copies in which a chunk of committed
// records waits (noteCommit): a read applies the rest first (read), so
// the applier wakes once per applyChunk records rather than per batch,
// and the frames kept for it stay within about a chunk per copy.
func (s *Standby) applier() {
	defer s.wg.Done()
	var due []*standbySKU
	for {
		select {
		case <-s.done:
			return
		case <-s.applyWake:
		}
		s.applyMu.Lock()
		due = due[:0]
		for x := range s.applyDue {
			due = append(due, x)
		}
		clear(s.applyDue)
		s.applyMu.Unlock()
		for _, x := range due {
			s.apply(x)
		}
	}
}

// apply brings x's applied state up to its commit index. A failure (the
// copy changed under it: a truncation behind a snapshot, a base copy)
// drops the state, which is built again from the copy once.
func (s *Standby) apply(x *standbySKU) {
	for retried := false; ; {
		select {
		case <-s.done:
			return // closing: the logs are about to close
		default:
		}
		more, err := s.applyOnce(x)
		switch {
		case err != nil && !retried:
			x.reads.reset()
			retried = true
		case err != nil:
			x.reads.reset()
			s.logger.Warn("replica: applying the committed records of the copy failed; built again when next applied",
				"sku", x.key.String(), "err", err)
			return
		case !more:
			return
		}
	}
}

// applyOnce applies at most applyChunk records of x's copy up to its
// commit index; more is set when records are left.
func (s *Standby) applyOnce(x *standbySKU) (more bool, err error) {
	s.mu.Lock()
	log, dir := x.log, x.dir
	s.mu.Unlock()
	if log == nil || log.Err() != nil {
		return false, nil // closed for a cut or a base copy: its session wakes the applier again
	}
	c := &x.reads
	c.mu.Lock()
	defer c.mu.Unlock()
	target := min(c.commit.Load(), log.DurableIndex())
	applied := c.applied.Load()
	if target == 0 || (c.m != nil && applied >= target) {
		return false, nil
	}
	if c.m == nil {
		res, err := recovery.Plan(committedLog{log, log.DurableIndex(), target}, snapshot.Dir(skudir.Dir(dir).Snapshots()),
			recovery.Options{CampaignID: x.key.campaignID, SKUID: x.key.skuID, UntilIndex: target})
		if errors.Is(err, recovery.ErrNoBase) {
			return false, nil // a base copy's snapshot beyond the commit index: once it is reached
		}
		if err != nil {
			return false, err
		}
		c.m = res.Machine
		c.applied.Store(res.LastApplied)
		return res.LastApplied < target, nil
	}
	until := min(target, applied+applyChunk)
	var source recovery.Log = committedLog{log, until, until}
	if frames := c.takePending(applied+1, until); frames != nil {
		source, until = pendingLog(frames), frames[len(frames)-1].index
	}
	last, err := recovery.Replay(source, c.m, applied+1)
	if last > 0 {
		applied = last
		c.applied.Store(last)
	}
	if err != nil {
		return false, err
	}
	if applied < until {
		return false, fmt.Errorf("the copy holds records up to %d, %d expected", applied, until)
	}
	return applied < target, nil
}

// committedLog is a copy's log as recovery reads it: it ends at last
// (durable), and Replay reads through until (committed) while the log is
// appended to (wal.Log.ReadLocal).
type committedLog struct {
	log         *wal.Log
	last, until uint64
}

func (l committedLog) FirstIndex() uint64 { return l.log.FirstIndex() }
func (l committedLog) LastIndex() uint64  { return l.last }

func (l committedLog) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	for from <= l.until {
		next, err := l.log.ReadLocal(from, int(min(l.until-from+1, applyChunk)), fn)
		if err != nil {
			return err
		}
		if next == from {
			return fmt.Errorf("the copy's durable records end before %d", from)
		}
		from = next
	}
	return nil
}

// pendingLog is frames kept in memory (consecutive indexes) as recovery
// reads a log.
type pendingLog []pendingFrame

func (l pendingLog) FirstIndex() uint64 { return l[0].index }
func (l pendingLog) LastIndex() uint64  { return l[len(l)-1].index }

func (l pendingLog) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	for _, f := range l {
		if f.index < from {
			continue
		}
		typ, index, payload, err := wal.DecodeFrame(f.frame)
		if err != nil {
			return err
		}
		if index != f.index {
			return fmt.Errorf("%w: a kept frame of index %d at %d", wal.ErrCorrupt, index, f.index)
		}
		if err := fn(index, typ, payload); err != nil {
			return err
		}
	}
	return nil
}
