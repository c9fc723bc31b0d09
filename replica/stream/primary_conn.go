package stream

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Timeouts of a connection. A standby that does not say hello, or does
// not take the bytes sent for this long, is disconnected (it dials again).
const (
	helloTimeout = 10 * time.Second
	writeTimeout = 10 * time.Second
	// stalledRetry is how soon a catch-up that waits for a batch being
	// written (shipped before it connected, not durable yet) looks again.
	stalledRetry = 2 * time.Millisecond
	// catchUpRecords and catchUpBytes bound one message read from disk.
	catchUpRecords = 8192
	catchUpBytes   = wal.DefaultMaxBatchBytes
)

// connMode is where one SKU's copy stands on one connection.
type connMode int

const (
	// modeStart: the copy has not begun on this connection (the pump
	// decides resume, cut or base copy).
	modeStart connMode = iota
	// modeCatchUp: the pump reads its records from the log's files.
	modeCatchUp
	// modeLive: every batch the flusher ships goes to the queue.
	modeLive
)

func (m connMode) String() string {
	switch m {
	case modeStart:
		return "start"
	case modeCatchUp:
		return "catch-up"
	case modeLive:
		return "live"
	}
	return fmt.Sprintf("connMode(%d)", int(m))
}

// connSKU is one SKU's copy on one connection.
type connSKU struct {
	mode      connMode
	next      uint64 // next record to send
	forceBase bool   // the records it needs are gone: a base copy
	// heldBase: it needs a base copy and is waited for; the base copy
	// waits until it is not (MayBaseCopy).
	heldBase bool
	// snapshot is the newest snapshot the standby holds of the SKU.
	snapshot uint64
	// sent times the records sent and not acknowledged: LagMillis.
	sent sendTimes
	// void, when voided: the Primary's voidAfter this copy's begin cut
	// the standby's copy to, forgotten at the copy's first
	// acknowledgement, which the standby sends only once it took the
	// begin (takeAcksLocked).
	void   uint64
	voided bool
}

// sendTimesCount bounds the send times a copy keeps: when full, the
// newest entry takes the later records too (their lag is then counted
// from an earlier send, never underestimated).
const sendTimesCount = 64

// sendTimes is a ring of (last index sent, when), oldest first.
type sendTimes struct {
	ring        [sendTimesCount]sendTime
	head, count int
}

type sendTime struct {
	last uint64
	at   time.Time
}

// sent notes that the records through last were sent at.
func (r *sendTimes) sent(last uint64, at time.Time) {
	if r.count == sendTimesCount {
		r.ring[(r.head+r.count-1)%sendTimesCount].last = last
		return
	}
	r.ring[(r.head+r.count)%sendTimesCount] = sendTime{last, at}
	r.count++
}

// acked forgets the sends the standby acknowledged.
func (r *sendTimes) acked(index uint64) {
	for r.count > 0 && r.ring[r.head].last <= index {
		r.ring[r.head] = sendTime{}
		r.head = (r.head + 1) % sendTimesCount
		r.count--
	}
}

// oldest is when the oldest record not acknowledged was sent.
func (r *sendTimes) oldest() (time.Time, bool) {
	if r.count == 0 {
		return time.Time{}, false
	}
	return r.ring[r.head].at, true
}

// snapshotDueLocked reports whether the standby should get the SKU's
// newest snapshot now: it is newer than the standby's, and every record
// it covers is queued before it.
func (cs *connSKU) snapshotDueLocked(s *primarySKU) bool {
	return SnapshotDue(cs.mode != modeStart, s.snapshot, cs.snapshot, cs.next)
}

// primaryConn is one standby's connection. Its state is guarded by the
// Primary's mu.
type primaryConn struct {
	p     *Primary
	name  string
	nc    net.Conn
	hello map[skuKey]helloSKU
	skus  map[skuKey]*connSKU
	queue *sendQueue
	wake  chan struct{}
	// closed is closed once by closeLocked.
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *primaryConn) wakeUp() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *primaryConn) closeLocked() {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.queue.close()
		c.nc.Close()
	})
}

// startLocked begins the copy of s on this connection.
func (c *primaryConn) startLocked(s *primarySKU) {
	c.skus[s.key] = &connSKU{mode: modeStart}
	c.wakeUp()
}

// noteCommitLocked sends the SKU's commit index to the standby once its
// copy began on this connection (its records up to the index are then
// the primary's: a cut of a tail the primary lacks comes before). A live
// copy of a log holding records not shipped yet gets it with their batch,
// which the log's flusher ships next (a log that fails first closes the
// connections: Opened); otherwise it goes now.
func (c *primaryConn) noteCommitLocked(s *primarySKU, index uint64) {
	cs := c.skus[s.key]
	if cs == nil || cs.mode == modeStart {
		return
	}
	carried := cs.mode == modeLive && s.log != nil && s.log.LastIndex() > s.shipped && s.log.Err() == nil
	c.queue.noteCommit(s.key, index, !carried)
}

// shipLocked queues the batch s just shipped if the copy is live; a full
// queue sends the copy back to catching up from disk.
func (c *primaryConn) shipLocked(s *primarySKU) {
	cs := c.skus[s.key]
	if cs == nil || cs.mode != modeLive {
		return
	}
	if cs.next != s.last.first {
		// A live copy has sent every batch shipped before this one: a
		// programming error, repaired by reading the log's files.
		c.p.logger.Error("replica: a live copy out of step; catching up from disk", "standby", c.name,
			"sku", s.key.String(), "next", cs.next, "batch_first", s.last.first)
	} else if c.queue.tryPush(s.last.message) {
		cs.next = s.last.last + 1
		cs.sent.sent(s.last.last, time.Now())
		return
	} else {
		c.p.metrics.queueFull.WithLabelValues(c.name).Inc()
	}
	cs.mode = modeCatchUp
	c.wakeUp()
}

// serve runs one standby's connection: its hello, then the writer and the
// pump beside this goroutine, which reads its acknowledgements.
func (p *Primary) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64<<10)
	nc.SetReadDeadline(time.Now().Add(helloTimeout))
	m, buf, err := readMessage(br, nil)
	if err == nil && m.typ != msgHello {
		err = fmt.Errorf("%w: message %d before hello", errProtocol, m.typ)
	}
	var h hello
	if err == nil {
		h, err = decodeHello(&m.body)
	}
	if err != nil {
		p.logger.Warn("replica: a standby's hello failed", "remote", nc.RemoteAddr().String(), "err", err)
		return
	}
	log := p.logger.With("standby", h.name, "remote", nc.RemoteAddr().String())
	switch {
	case h.set != p.cfg.Set:
		log.Warn("replica: refused a standby of another replica set", "its_set", h.set)
		return
	case StaleEpoch(m.epoch, p.cfg.Epoch):
		p.metrics.refused.Inc()
		log.Error("replica: refused a standby that has seen a later epoch: this primary was deposed and acknowledges nothing more",
			"its_epoch", m.epoch)
		return
	case h.name == "" || h.name == p.cfg.Name:
		log.Warn("replica: refused a standby without a name of its own")
		return
	}
	// A standby sends nothing after its hello until the primary's first
	// message, so one whose peer already ended it is no standby's now: it
	// waited in the listener's queue while this replica did not lead (the
	// replication address stays bound for the process's life), dialed by a
	// standby that has since moved to another primary or died. Taken, it
	// would be logged as that standby connected, with the epoch it had
	// then, and close the live connection of the same name.
	if err := ended(nc); err != nil {
		log.Info("replica: ignored a standby's connection that ended before this primary took it", "its_epoch", m.epoch, "err", err)
		return
	}
	nc.SetReadDeadline(time.Time{})
	c := &primaryConn{p: p, name: h.name, nc: nc, hello: make(map[skuKey]helloSKU, len(h.skus)),
		skus: make(map[skuKey]*connSKU), queue: newSendQueue(), wake: make(chan struct{}, 1), closed: make(chan struct{})}
	for _, s := range h.skus {
		c.hello[s.key] = s
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	if old := p.conns[h.name]; old != nil {
		log.Warn("replica: a standby of the same name connected again; its older connection is closed")
		old.closeLocked()
	}
	p.conns[h.name] = c
	p.seen[h.name] = true
	delete(p.beyond, h.name)
	for _, s := range p.skus {
		if s.log != nil {
			c.startLocked(s)
		}
	}
	p.mu.Unlock()
	log.Info("replica: standby connected", "skus", len(h.skus), "its_epoch", m.epoch)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.write(c) }()
	go func() { defer wg.Done(); p.pump(c) }()
	err = p.readAcks(c, br, buf)
	p.mu.Lock()
	if p.conns[c.name] == c {
		delete(p.conns, c.name)
	}
	c.closeLocked()
	p.mu.Unlock()
	wg.Wait()
	log.Warn("replica: standby disconnected", "err", err)
}

// readAcks reads the standby's acknowledgements until the connection ends.
func (p *Primary) readAcks(c *primaryConn, br *bufio.Reader, buf []byte) error {
	for {
		m, b, err := readMessage(br, buf)
		buf = b
		if err != nil {
			return err
		}
		if m.typ != msgAck {
			return fmt.Errorf("%w: message %d from a standby", errProtocol, m.typ)
		}
		if StaleEpoch(m.epoch, p.cfg.Epoch) {
			p.metrics.refused.Inc()
			return fmt.Errorf("%w: the standby has seen epoch %d, this primary is of %d: it was deposed", ErrStaleEpoch, m.epoch, p.cfg.Epoch)
		}
		acks, err := decodeAcks(&m.body)
		if err != nil {
			return err
		}
		p.mu.Lock()
		if p.conns[c.name] != c || c.isClosed() {
			// A closed connection stays in conns until serve removes it;
			// an acknowledgement read before the close may be of a
			// record its SKU's log no longer holds (opened capped them).
			p.mu.Unlock()
			return ErrClosed
		}
		p.takeAcksLocked(c, acks)
		p.mu.Unlock()
	}
}

// takeAcksLocked takes the acknowledgements of c's standby that are of
// its copies: below each copy's next record (cs.next, set before the
// records go out, so that an acknowledgement never overtakes it).
func (p *Primary) takeAcksLocked(c *primaryConn, acks []ack) {
	for _, a := range acks {
		cs := c.skus[a.key]
		if cs == nil || cs.mode == modeStart || a.index >= cs.next {
			continue // from before this copy began, or beyond what was sent: not this copy's
		}
		if cs.voided {
			if p.voidAfter[c.name][a.key] == cs.void {
				delete(p.voidAfter[c.name], a.key)
			}
			cs.voided = false
		}
		p.ackLocked(c.name, a.key, a.index)
	}
}

// write sends the queued messages, flushing when the queue is empty.
func (p *Primary) write(c *primaryConn) {
	w := bufio.NewWriterSize(c.nc, 256<<10)
	var batch [][]byte
	var commits []ack
	for {
		var ok bool
		if batch, commits, ok = c.queue.popAll(batch, commits); !ok {
			return
		}
		if len(commits) > 0 {
			batch = append(batch, encodeCommits(p.cfg.Epoch, commits))
		}
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		var err error
		for _, m := range batch {
			if _, err = w.Write(m); err != nil {
				break
			}
		}
		if err == nil {
			err = w.Flush()
		}
		clear(batch)
		if err != nil {
			p.mu.Lock()
			c.closeLocked()
			p.mu.Unlock()
			return
		}
	}
}

// pump begins each SKU's copy and catches up from disk those that are not
// live, until the connection closes.
func (p *Primary) pump(c *primaryConn) {
	for {
		stalled := false
		for {
			worked, st := p.pumpOnce(c)
			stalled = st
			if !worked {
				break
			}
		}
		var retry <-chan time.Time
		if stalled {
			retry = time.After(stalledRetry)
		}
		select {
		case <-c.wake:
		case <-c.closed:
			return
		case <-retry:
		}
	}
}

// pumpOnce does one step of each copy that is not live: whether any made
// progress, and whether one waits for a batch being written.
func (p *Primary) pumpOnce(c *primaryConn) (worked, stalled bool) {
	type job struct {
		s    *primarySKU
		cs   *connSKU
		mode connMode
	}
	var jobs []job
	p.mu.Lock()
	var snapshots []job
	for k, cs := range c.skus {
		if cs.mode != modeLive {
			jobs = append(jobs, job{p.skus[k], cs, cs.mode})
		}
		if s := p.skus[k]; cs.snapshotDueLocked(s) {
			snapshots = append(snapshots, job{s, cs, cs.mode})
		}
	}
	p.mu.Unlock()
	for _, j := range snapshots {
		w, st := p.shipSnapshot(c, j.s, j.cs)
		worked, stalled = worked || w, stalled || st
	}
	for _, j := range jobs {
		select {
		case <-c.closed:
			return false, false
		default:
		}
		var w, st bool
		if j.mode == modeStart {
			w, st = p.begin(c, j.s, j.cs)
		} else {
			w, st = p.catchUp(c, j.s, j.cs)
		}
		worked, stalled = worked || w, stalled || st
	}
	return worked, stalled
}

// begin decides how one SKU's copy starts on a connection, from the
// standby's hello: resume where it ends, cut a tail the primary does not
// hold (never committed), or a base copy when the primary no longer has
// the records it needs (or it has none and a snapshot exists).
func (p *Primary) begin(c *primaryConn, s *primarySKU, cs *connSKU) (worked, stalled bool) {
	p.mu.Lock()
	log, dir, history := s.log, s.dir, s.history
	theirs, known := c.hello[s.key]
	force := cs.forceBase
	void, voided := p.voidAfter[c.name][s.key]
	waited := slices.Contains(p.standbys.Waited(), c.name)
	p.mu.Unlock()
	if !known {
		theirs = helloSKU{key: s.key, first: 1}
	}
	myLast := log.LastIndex()
	myFirst := log.FirstIndex()
	if myFirst == 0 {
		myFirst = myLast + 1
	}
	mode, index := PlanBegin(Copy{
		TheirHistory: theirs.history, TheirFirst: theirs.first, TheirLast: theirs.last,
		MyHistory: history, MyFirst: myFirst, MyLast: myLast,
		Void: void, Voided: voided, ForceBase: force, Snapshot: theirs.last == 0 && hasSnapshot(dir),
	})
	if mode == Base && !MayBaseCopy(waited) {
		p.mu.Lock()
		held := cs.heldBase
		cs.heldBase = true
		p.mu.Unlock()
		if !held {
			p.logger.Warn("replica: a standby the primary waits for needs a base copy; it is dropped from the sync set first",
				"standby", c.name, "sku", s.key.String(), "its_last", theirs.last, "first", myFirst)
		}
		return false, false // Wait wakes the pump
	}
	b := begin{key: s.key, history: history, mode: byte(mode), index: index}
	var err error
	if b.feedHistory, err = os.ReadFile(filepath.Join(dir, feed.HistoryFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.drop(c, s.key, "replica: read the feed history failed; the standby reconnects", err)
		return false, false
	}
	var snap []byte
	if b.mode == beginBase {
		if b.index, snap, err = newestSnapshot(dir, myFirst); err != nil {
			p.drop(c, s.key, "replica: no base copy possible; the standby reconnects", err)
			return false, false
		}
		b.snapshotSize = uint64(len(snap))
	}
	if !c.queue.push(encodeBegin(p.cfg.Epoch, b)) {
		return false, false
	}
	if !p.pushChunks(c, s.key, snap) {
		return false, false
	}
	if beginQueued != nil {
		beginQueued()
	}
	switch b.mode {
	case beginBase:
		p.metrics.baseCopies.WithLabelValues(c.name).Inc()
		p.logger.Info("replica: base copy to a standby", "standby", c.name, "sku", s.key.String(),
			"snapshot_index", b.index, "snapshot_bytes", len(snap), "its_last", theirs.last)
	case beginCut:
		p.logger.Warn("replica: a standby's copy holds records this primary does not (never committed); it cuts them",
			"standby", c.name, "sku", s.key.String(), "kept_through", b.index, "its_last", theirs.last)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.skus[s.key] != cs || c.isClosed() {
		// Closed meanwhile (a log opened again caps what each standby
		// holds): the begin's index is no longer what the standby holds.
		return true, false
	}
	cs.mode, cs.next, cs.forceBase, cs.heldBase = modeCatchUp, b.index+1, false, false
	cs.sent = sendTimes{}
	// The void is forgotten once the standby holds no record past it:
	// now, if its hello says so; otherwise once it took this begin (its
	// first acknowledgement of the copy). Forgotten as the begin is
	// queued, a connection that ended before the standby cut its copy
	// would leave it holding the records the primary never wrote, which
	// its next hello would show as shared (the same epoch at the same
	// indexes as the primary's records written since).
	cs.void, cs.voided = void, voided && theirs.last > void
	if voided && !cs.voided && p.voidAfter[c.name][s.key] == void {
		delete(p.voidAfter[c.name], s.key)
	}
	switch b.mode {
	case beginBase:
		cs.snapshot = b.index
	case beginCut:
		cs.snapshot = min(theirs.snapshot, b.index) // it removes those beyond the cut
	default:
		cs.snapshot = theirs.snapshot
	}
	acked := b.index
	if b.mode == beginBase {
		acked = 0 // until it acknowledges the installed copy
	}
	p.setAckedLocked(c.name, s.key, acked)
	if s.log == log {
		c.noteCommitLocked(s, log.CommitIndex())
	}
	return true, false
}

// drop closes a connection that cannot go on (the standby dials again,
// at most once a second): a failure is logged once per attempt, not per
// retry of the pump.
func (p *Primary) drop(c *primaryConn, k skuKey, msg string, err error) {
	p.logger.Error(msg, "standby", c.name, "sku", k.String(), "err", err)
	p.mu.Lock()
	c.closeLocked()
	p.mu.Unlock()
}

// beginQueued, when set (by a test), runs after begin queued its
// messages and before it takes the primary's lock again: where the
// SKU's log may be opened again and the connection closed.
var beginQueued func()

// catchUpQueued, when set (by a test), runs after catchUp queued records
// and before it takes the primary's lock again: where a standby's
// acknowledgement of them may come in.
var catchUpQueued func()

// catchUp sends the next records of a copy from the log's files, and makes
// the copy live once it reaches what the flusher ships.
func (p *Primary) catchUp(c *primaryConn, s *primarySKU, cs *connSKU) (worked, stalled bool) {
	p.mu.Lock()
	log, from := s.log, cs.next
	p.mu.Unlock()
	enc := newRecords(p.cfg.Epoch, s.key, from, 64<<10)
	next, err := ReadFrames(log, from, catchUpRecords, func(frame []byte) bool {
		if enc.count > 0 && enc.size()+len(frame) > catchUpBytes {
			return false
		}
		enc.add(frame)
		return true
	})
	switch {
	case errors.Is(err, wal.ErrCompacted):
		p.mu.Lock()
		cs.mode, cs.forceBase = modeStart, true
		p.mu.Unlock()
		p.logger.Warn("replica: a standby needs records this primary truncated: base copy", "standby", c.name,
			"sku", s.key.String(), "err", err)
		return true, false
	case err != nil && log.Err() != nil:
		return false, false // closed or failed: its next log's Opened closes this connection
	case err != nil:
		p.drop(c, s.key, "replica: catch-up read failed; the standby reconnects", err)
		return false, false
	}
	// The copy's next record moves before the records are queued: the
	// standby may write them, fsync and acknowledge them before this
	// goroutine runs again, and an acknowledgement at or beyond cs.next is
	// dropped as not this copy's. It acknowledges each index once, so a
	// SKU with no later record (a new SKU's definition) would wait for its
	// commit until the standby reconnected.
	p.mu.Lock()
	if c.skus[s.key] != cs || s.log != log {
		p.mu.Unlock()
		return true, false
	}
	cs.next = next
	if enc.count > 0 {
		cs.sent.sent(next-1, time.Now())
	}
	p.mu.Unlock()
	if enc.count > 0 {
		if !c.queue.push(enc.done()) {
			return false, false
		}
		if catchUpQueued != nil {
			catchUpQueued()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.skus[s.key] != cs || s.log != log {
		return true, false
	}
	switch {
	case cs.next == s.shipped+1:
		cs.mode = modeLive
	case s.last.message != nil && cs.next == s.last.first && c.queue.tryPush(s.last.message):
		cs.next, cs.mode = s.last.last+1, modeLive
		cs.sent.sent(s.last.last, time.Now())
	case cs.next > log.DurableIndex():
		return enc.count > 0, true
	}
	return true, false
}

// shipSnapshot sends the SKU's newest snapshot to a standby whose copy
// it covers, so that the standby truncates its copy as the primary does.
func (p *Primary) shipSnapshot(c *primaryConn, s *primarySKU, cs *connSKU) (worked, stalled bool) {
	p.mu.Lock()
	dir, log, next := s.dir, s.log, cs.next
	p.mu.Unlock()
	index, b, err := newestSnapshot(dir, 0)
	if index >= next {
		return false, true // a newer one than announced: its records are on their way
	}
	if err != nil || index == 0 {
		p.logger.Warn("replica: no snapshot to ship; the standby's copy is truncated at the next one",
			"standby", c.name, "sku", s.key.String(), "err", err)
		p.mu.Lock()
		cs.snapshot = max(cs.snapshot, s.snapshot)
		p.mu.Unlock()
		return false, false
	}
	o := snapshotOffer{key: s.key, index: index, size: uint64(len(b)), keepFrom: KeepFrom(log)}
	if !c.queue.push(encodeInstall(p.cfg.Epoch, o)) || !p.pushChunks(c, s.key, b) {
		return false, false
	}
	p.mu.Lock()
	cs.snapshot = max(cs.snapshot, index)
	p.mu.Unlock()
	return true, false
}

// pushChunks queues a snapshot's bytes in chunks; false once the
// connection closed.
func (p *Primary) pushChunks(c *primaryConn, k skuKey, b []byte) bool {
	for off := 0; off < len(b); off += snapshotChunkSize {
		if !c.queue.push(encodeSnapshotChunk(p.cfg.Epoch, k, uint64(off), b[off:min(off+snapshotChunkSize, len(b))])) {
			return false
		}
	}
	return true
}

// hasSnapshot reports whether a SKU folder holds a snapshot file.
func hasSnapshot(dir string) bool {
	files, err := snapshot.List(skudir.Dir(dir).Snapshots())
	return err == nil && len(files) > 0
}

// newestSnapshot returns the newest valid snapshot of a SKU folder whose
// next record the log holds (BaseSnapshot; first is the log's first
// record).
func newestSnapshot(dir string, first uint64) (uint64, []byte, error) {
	files, err := snapshot.List(skudir.Dir(dir).Snapshots())
	if err != nil {
		return 0, nil, err
	}
	return BaseSnapshot(files, first, func(f snapshot.File) ([]byte, error) { return os.ReadFile(f.Path) })
}

// isClosed reports whether closeLocked closed the connection.
func (c *primaryConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}
