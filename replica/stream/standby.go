package stream

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Reconnection of a standby: the first retry after this, doubling up to
// the most.
const (
	reconnectFirst = 50 * time.Millisecond
	reconnectMost  = time.Second
	dialTimeout    = 5 * time.Second
)

// StandbyConfig configures NewStandby.
type StandbyConfig struct {
	// Set and Name are the replica set's name and this replica's.
	Set, Name string
	// DataDir is this replica's data dir, laid out as the engine's
	// (<DataDir>/<campaign>/<sku>/{wal,snapshots}).
	DataDir string
	// Primary is the primary's replication address (host:port).
	Primary string
	// WAL tunes the copies' logs as actors.Config.WAL tunes the engine's
	// (zero: wal's defaults, fsync always).
	WAL wal.Options
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the standby's metrics (nil: none).
	Registerer prometheus.Registerer
}

// Standby copies its primary's SKU logs into its data dir: the same
// records at the same indexes, byte for byte, each fsynced with the
// wal's own group commit before it is acknowledged.
type Standby struct {
	cfg     StandbyConfig
	logger  *slog.Logger
	metrics *standbyMetrics

	epoch   atomic.Uint64 // the highest seen, on disk before it is used
	records atomic.Uint64

	mu        sync.Mutex
	skus      map[skuKey]*standbySKU
	nc        net.Conn // the current connection, closed by Close
	connected bool
	lastErr   error
	closed    bool

	unlock func() error // the data dir's lock (actors.LockDataDir)
	done   chan struct{}
	wg     sync.WaitGroup

	// The applier's work (reads.go): the copies whose committed state may
	// advance.
	applyMu   sync.Mutex
	applyDue  map[*standbySKU]struct{}
	applyWake chan struct{}
	// pendingBytes are the frames every copy keeps for the applier.
	pendingBytes atomic.Int64
}

// standbySKU is the copy of one SKU; its fields are the session
// goroutine's (log and install changed under Standby.mu).
type standbySKU struct {
	key     skuKey
	dir     string
	log     *wal.Log // nil while a base copy installs
	install *install
	// reads is the copy applied up to the commit index (reads.go).
	reads committedState
}

// standbySnapshotKeep is how many snapshots a standby keeps of each SKU
// (the engine's default): its copy is truncated up to the oldest.
const standbySnapshotKeep = actors.DefaultSnapshotKeep

// NewStandby locks cfg.DataDir (no engine may open it meanwhile), opens
// the copies found in it and starts copying from the primary,
// reconnecting until Close. It refuses every message of an
// epoch lower than ReadEpoch(DataDir).
func NewStandby(cfg StandbyConfig) (*Standby, error) {
	if cfg.DataDir == "" || cfg.Primary == "" || cfg.Name == "" {
		return nil, errors.New("stream: StandbyConfig needs DataDir, Primary and Name")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, err
	}
	unlock, err := actors.LockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	e, err := ReadEpoch(cfg.DataDir)
	if err != nil {
		unlock()
		return nil, err
	}
	s := &Standby{
		unlock:  unlock,
		cfg:     cfg,
		logger:  cfg.Logger.With("replica_set", cfg.Set, "replica", cfg.Name),
		metrics: newStandbyMetrics(cfg.Registerer),
		skus:    make(map[skuKey]*standbySKU),
		done:    make(chan struct{}),

		applyDue:  make(map[*standbySKU]struct{}),
		applyWake: make(chan struct{}, 1),
	}
	s.epoch.Store(e)
	s.metrics.epoch.Set(float64(e))
	if err := s.openAll(); err != nil {
		s.closeLogs()
		s.metrics.unregister()
		unlock()
		return nil, err
	}
	s.wg.Add(2)
	go s.run()
	go s.applier()
	return s, nil
}

// SKUState is a standby's copy of one SKU log.
type SKUState struct {
	CampaignID, SKUID       string
	LastIndex, DurableIndex uint64
	// CommitIndex is the highest the primary sent; Applied, the index
	// the standby's reads reach (at most CommitIndex).
	CommitIndex, Applied uint64
}

// StandbyState is what a standby knows of its copy.
type StandbyState struct {
	Epoch     uint64
	Connected bool
	Records   uint64 // copied since NewStandby
	SKUs      []SKUState
	LastError string // why the last connection ended
}

// Status returns the standby's state.
func (s *Standby) Status() StandbyState {
	for _, x := range s.snapshotSKUs() {
		s.apply(x) // Applied is what a read would reach
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StandbyState{Epoch: s.epoch.Load(), Connected: s.connected, Records: s.records.Load()}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	for k, x := range s.skus {
		c := SKUState{CampaignID: k.campaignID, SKUID: k.skuID}
		if x.log != nil {
			c.LastIndex, c.DurableIndex = x.log.LastIndex(), x.log.DurableIndex()
		}
		x.reads.mu.Lock()
		c.CommitIndex = x.reads.commit.Load()
		if x.reads.m != nil {
			c.Applied = x.reads.applied.Load()
		}
		x.reads.mu.Unlock()
		st.SKUs = append(st.SKUs, c)
	}
	sort.Slice(st.SKUs, func(i, j int) bool {
		a, b := st.SKUs[i], st.SKUs[j]
		return a.CampaignID < b.CampaignID || (a.CampaignID == b.CampaignID && a.SKUID < b.SKUID)
	})
	return st
}

// Close stops copying and closes every log (fsynced): the data dir may
// then be opened by actors.Engine (a promotion) or another Standby.
func (s *Standby) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	if s.nc != nil {
		s.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	err := s.closeLogs()
	s.metrics.unregister()
	if uerr := s.unlock(); err == nil {
		err = uerr
	}
	return err
}

func (s *Standby) closeLogs() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first error
	for _, x := range s.skus {
		dropInstallLocked(x)
		if x.log != nil {
			if err := x.log.Close(); err != nil && first == nil {
				first = err
			}
			x.log = nil
		}
	}
	return first
}

// openAll opens the log of every SKU folder not open yet, and opens again
// a log that failed.
func (s *Standby) openAll() error {
	dirs, err := skudir.List(s.cfg.DataDir)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		campaignID, skuID := dir.IDs()
		k := skuKey{campaignID, skuID}
		s.mu.Lock()
		x := s.skus[k]
		if x == nil {
			x = &standbySKU{key: k, dir: dir.String(), reads: committedState{total: &s.pendingBytes}}
			s.skus[k] = x
		}
		s.mu.Unlock()
	}
	for _, x := range s.snapshotSKUs() {
		s.dropInstall(x)
		if x.log != nil && x.log.Err() == nil {
			continue
		}
		if err := s.reopen(x); err != nil {
			return err
		}
	}
	return nil
}

func (s *Standby) snapshotSKUs() []*standbySKU {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*standbySKU, 0, len(s.skus))
	for _, x := range s.skus {
		out = append(out, x)
	}
	return out
}

// reopen closes a copy's log (if open) and opens it again.
func (s *Standby) reopen(x *standbySKU) error {
	s.closeLog(x)
	l, err := wal.Open(skudir.Dir(x.dir).WAL(), s.walOptions())
	if err != nil {
		return fmt.Errorf("stream: open the copy of %s: %w", x.key, err)
	}
	s.mu.Lock()
	x.log = l
	s.mu.Unlock()
	return nil
}

func (s *Standby) closeLog(x *standbySKU) {
	s.mu.Lock()
	l := x.log
	x.log = nil
	s.mu.Unlock()
	if l != nil {
		l.Close() // a failure is the log's own, reported by it; the copy opens again
	}
}

func (s *Standby) walOptions() wal.Options {
	o := s.cfg.WAL
	o.Logger = s.cfg.Logger
	o.Replicated, o.Shipper = false, nil
	return o
}

// run connects to the primary until Close.
func (s *Standby) run() {
	defer s.wg.Done()
	wait := reconnectFirst
	for {
		start := time.Now()
		err := s.session()
		s.mu.Lock()
		s.connected, s.lastErr, s.nc = false, err, nil
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		s.logger.Warn("replica: connection to the primary ended; reconnecting", "primary", s.cfg.Primary, "err", err)
		if time.Since(start) > 10*reconnectMost {
			wait = reconnectFirst
		}
		select {
		case <-s.done:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, reconnectMost)
	}
}

// session is one connection: hello, then the primary's messages, acked
// by a goroutine of its own.
func (s *Standby) session() error {
	nc, err := net.DialTimeout("tcp", s.cfg.Primary, dialTimeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.nc = nc
	s.mu.Unlock()
	s.metrics.connects.Inc()
	if err := s.openAll(); err != nil {
		return err
	}
	h, err := s.hello()
	if err != nil {
		return err
	}
	if _, err := nc.Write(encodeHello(s.epoch.Load(), h)); err != nil {
		return err
	}
	s.mu.Lock()
	s.connected = true
	s.mu.Unlock()
	// Stopped in this order: the connection closed with the acknowledgements
	// (nothing more sent), then the begins waited for.
	begins := newBegins(func() { nc.Close() })
	defer begins.wait()
	acks := newAcker(s, nc)
	defer acks.stop()
	br := bufio.NewReaderSize(nc, 256<<10)
	var buf []byte
	for {
		var m message
		m, buf, err = readMessage(br, buf)
		if err != nil {
			return begins.failure(err)
		}
		if err := s.checkEpoch(m.epoch); err != nil {
			return err
		}
		if err := s.dispatch(m, begins, acks); err != nil {
			return begins.failure(err)
		}
	}
}

// dispatch acts on one of the primary's messages: a begin beside the
// session (begins), a message of a SKU whose begin runs behind it, any
// other at once.
func (s *Standby) dispatch(m message, begins *begins, acks *acker) error {
	switch m.typ {
	case msgCommit:
		list, err := decodeCommits(&m.body)
		if err != nil {
			return err
		}
		for _, c := range list {
			busy, err := begins.runs(c.key)
			if err != nil {
				return err
			}
			if busy {
				behind, err := begins.then(c.key, 0, func() error { s.noteCommit(c); return nil })
				if err != nil {
					return err
				}
				if behind {
					continue
				}
			}
			s.noteCommit(c)
		}
		return nil
	case msgBegin, msgInstall, msgSnapshot, msgRecords:
	default:
		return fmt.Errorf("%w: message %d from the primary", errProtocol, m.typ)
	}
	peek := m.body
	k := skuKey{peek.str(), peek.str()}
	if peek.err != nil {
		return peek.err
	}
	busy, err := begins.runs(k)
	if err != nil {
		return err
	}
	if m.typ != msgBegin && !busy {
		return s.handle(m.typ, &m.body, acks)
	}
	// A message that waits is read after the next ones overwrote the
	// session's buffer: it keeps a copy of its own.
	body := slices.Clone(m.body.b)
	later := func() error { return s.handle(m.typ, &decoder{b: body}, acks) }
	if m.typ == msgBegin {
		return begins.start(k, len(body), later)
	}
	if behind, err := begins.then(k, len(body), later); behind || err != nil {
		return err
	}
	return later()
}

// handle acts on a message of one SKU's copy (its key first in body), in
// the order of that SKU's messages.
func (s *Standby) handle(typ byte, body *decoder, acks *acker) error {
	switch typ {
	case msgBegin:
		return s.begin(body, acks)
	case msgInstall:
		return s.offer(body)
	case msgSnapshot:
		return s.snapshotChunk(body, acks)
	default:
		return decodeRecords(body, func(k skuKey, first uint64, frames [][]byte) error {
			return s.append(k, first, frames, acks)
		})
	}
}

// checkEpoch refuses a message of a lower epoch than the highest seen, and
// makes a higher one durable before the message is acted on.
func (s *Standby) checkEpoch(e uint64) error {
	seen := s.epoch.Load()
	err := AcceptEpoch(seen, e, func(e uint64) error {
		if err := raiseEpoch(s.cfg.DataDir, e); err != nil {
			return err
		}
		s.epoch.Store(e)
		s.metrics.epoch.Set(float64(e))
		return nil
	})
	if errors.Is(err, ErrStaleEpoch) {
		s.metrics.refused.Inc()
		s.logger.Error("replica: refused a message of a stale epoch: its sender is no longer the primary",
			"epoch", e, "seen", seen, "primary", s.cfg.Primary)
	}
	return err
}

// hello lists what the standby holds of each SKU, every record durable.
func (s *Standby) hello() (hello, error) {
	h := hello{set: s.cfg.Set, name: s.cfg.Name}
	for _, x := range s.snapshotSKUs() {
		if x.log == nil {
			continue
		}
		if err := awaitDurable(x.log, x.log.LastIndex()); err != nil {
			return h, err
		}
		last := x.log.LastIndex()
		first := x.log.FirstIndex()
		if first == 0 {
			first = last + 1
		}
		hist, err := ReadHistory(x.dir)
		if err != nil {
			return h, err
		}
		snaps, err := snapshot.List(skudir.Dir(x.dir).Snapshots())
		if err != nil {
			return h, err
		}
		var newest uint64
		if n := len(snaps); n > 0 {
			newest = snaps[n-1].Index
		}
		h.skus = append(h.skus, helloSKU{key: x.key, first: first, last: last, snapshot: newest, history: HelloHistory(hist, last)})
	}
	return h, nil
}

// sku returns the copy of k, creating its folder (fsynced) for a SKU new
// to this standby.
func (s *Standby) sku(k skuKey) (*standbySKU, error) {
	s.mu.Lock()
	x := s.skus[k]
	s.mu.Unlock()
	if x != nil {
		return x, nil
	}
	if !sku.ValidID(k.campaignID) || !sku.ValidID(k.skuID) {
		return nil, fmt.Errorf("%w: SKU %q", errProtocol, k.String())
	}
	dir := skudir.Of(s.cfg.DataDir, k.campaignID, k.skuID).String()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	for _, d := range []string{filepath.Dir(dir), s.cfg.DataDir} {
		if err := wal.SyncDir(d); err != nil {
			return nil, err
		}
	}
	x = &standbySKU{key: k, dir: dir, reads: committedState{total: &s.pendingBytes}}
	if err := s.reopen(x); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.skus[k] = x
	s.mu.Unlock()
	s.logger.Info("replica: copying a new SKU", "sku", k.String())
	return x, nil
}

// begin starts a SKU's copy as the primary decided: resume, cut or base.
func (s *Standby) begin(d *decoder, acks *acker) error {
	b, err := decodeBegin(d)
	if err != nil {
		return err
	}
	x, err := s.sku(b.key)
	if err != nil {
		return err
	}
	s.dropInstall(x)
	if x.log == nil { // a base copy that did not finish
		if err := s.reopen(x); err != nil {
			return err
		}
	}
	files := standbyCopy{s: s, x: x, feedHistory: b.feedHistory}
	if b.mode != beginBase {
		if err := BeginCopy(files, BeginMode(b.mode), b.index, b.history); err != nil {
			return fmt.Errorf("%s: %w", b.key, err)
		}
		return nil
	}
	if err := BeginBase(files, b.history); err != nil {
		return err
	}
	return s.startInstall(x, b.index, b.snapshotSize, acks)
}

// noteCommit takes the primary's commit index of a SKU: a read brings
// its copy's committed state up to it, the applier once a chunk waits.
func (s *Standby) noteCommit(c ack) {
	if x := s.lookupSKU(c.key); x != nil && x.reads.noteCommit(c.index) {
		s.wakeApplier(x)
	}
}

// append copies a batch of the primary's frames and acknowledges it once
// durable (the wal's group commit).
func (s *Standby) append(k skuKey, first uint64, frames [][]byte, acks *acker) error {
	s.mu.Lock()
	x := s.skus[k]
	s.mu.Unlock()
	if x == nil || x.log == nil || (x.install != nil && x.install.base) {
		return fmt.Errorf("%w: records of %s before its copy began", errProtocol, k)
	}
	err := ApplyRecords(x.log, first, frames, func(last uint64, err error) {
		if err != nil {
			// The copy's log failed (a full disk, an I/O error): it
			// acknowledges nothing more until it is opened again, which
			// the next session does (the primary sends the records again
			// from where the copy ends). End this session now rather
			// than at the primary's next message, which may never come
			// while the primary waits for this acknowledgement.
			s.logger.Error("replica: writing the copy of the log failed; reconnecting to open it again", "sku", k.String(), "err", err)
			acks.nc.Close()
			return
		}
		acks.note(k, last)
	})
	if err != nil {
		return fmt.Errorf("copy of %s: %w", k, err)
	}
	// Kept for the applier, so it need not read them back from the files;
	// a batch made durable before this line is read from the files instead.
	x.reads.keep(first, frames)
	s.records.Add(uint64(len(frames)))
	s.metrics.records.Add(float64(len(frames)))
	return nil
}
