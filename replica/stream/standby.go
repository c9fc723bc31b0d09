package stream

import (
	"bufio"
	"bytes"
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
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/replica"
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

// install is a snapshot being received: a base copy's (the copy's log
// is closed meanwhile), or a new one of the primary's, beside the log.
type install struct {
	index, size, written uint64
	file                 *os.File
	base                 bool
	keepFrom             uint64 // a new snapshot: the primary's first record
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

// dropInstall removes a snapshot being received that will not be
// finished (its connection ended).
func (s *Standby) dropInstall(x *standbySKU) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropInstallLocked(x)
}

func dropInstallLocked(x *standbySKU) {
	if x.install != nil {
		x.install.file.Close()
		os.Remove(x.install.file.Name())
		x.install = nil
	}
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
	acks := newAcker(s, nc)
	defer acks.stop()
	br := bufio.NewReaderSize(nc, 256<<10)
	var buf []byte
	for {
		var m message
		m, buf, err = readMessage(br, buf)
		if err != nil {
			return err
		}
		if err := s.checkEpoch(m.epoch); err != nil {
			return err
		}
		switch m.typ {
		case msgBegin:
			err = s.begin(&m.body, acks)
		case msgInstall:
			err = s.offer(&m.body)
		case msgSnapshot:
			err = s.snapshotChunk(&m.body, acks)
		case msgRecords:
			err = decodeRecords(&m.body, func(k skuKey, first uint64, frames [][]byte) error {
				return s.append(k, first, frames, acks)
			})
		case msgCommit:
			err = s.commits(&m.body)
		default:
			err = fmt.Errorf("%w: message %d from the primary", errProtocol, m.typ)
		}
		if err != nil {
			return err
		}
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

// awaitDurable waits until log holds index durably.
func awaitDurable(log *wal.Log, index uint64) error {
	if index == 0 {
		return nil
	}
	done := make(chan error, 1)
	log.Await(index, wal.WaiterFunc(func(err error) { done <- err }))
	return <-done
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

// standbyCopy is a copy's SKU folder as BeginCopy, a base copy
// (BeginBase, FinishBase) and a new snapshot (InstallSnapshot) change it;
// the begin's feed history is written with the epoch history, and
// received is the file a snapshot was received into.
type standbyCopy struct {
	s           *Standby
	x           *standbySKU
	feedHistory []byte
	received    string
}

func (c standbyCopy) Log() *wal.Log { return c.x.log }

func (c standbyCopy) Cut(index uint64) error { return c.s.cut(c.x, index) }

func (c standbyCopy) WriteHistory(h replica.History) error {
	if err := syncFile(c.x.dir, feed.HistoryFile, c.feedHistory); err != nil {
		return err
	}
	return WriteHistory(c.x.dir, h)
}

func (c standbyCopy) Drop() error { return c.s.dropCopy(c.x) }

func (c standbyCopy) Install(index uint64) error { return placeSnapshot(c.received, index) }

func (c standbyCopy) Snapshots() ([]uint64, error) {
	files, err := snapshot.List(skudir.Dir(c.x.dir).Snapshots())
	if err != nil {
		return nil, err
	}
	indexes := make([]uint64, len(files))
	for i, f := range files {
		indexes[i] = f.Index
	}
	return indexes, nil
}

func (c standbyCopy) RemoveSnapshots(indexes []uint64) error {
	return removeSnapshots(c.x.dir, func(i uint64) bool { return slices.Contains(indexes, i) })
}

func (c standbyCopy) AwaitDurable(index uint64) error { return awaitDurable(c.x.log, index) }

// Start writes an empty log that goes on at index+1 and opens it.
func (c standbyCopy) Start(index uint64) error {
	if _, _, err := wal.CopyRange(skudir.Dir(c.x.dir).WAL(), nil, 0, index); err != nil {
		return err
	}
	return c.s.reopen(c.x)
}

// placeSnapshot renames a snapshot received (written and fsynced) to its
// name, durably.
func placeSnapshot(path string, index uint64) error {
	if err := os.Rename(path, filepath.Join(filepath.Dir(path), snapshot.Name(index))); err != nil {
		return err
	}
	return wal.SyncDir(filepath.Dir(path))
}

// commits takes the primary's commit indexes: a read brings a copy's
// committed state up to them, the applier once a chunk waits.
func (s *Standby) commits(d *decoder) error {
	list, err := decodeCommits(d)
	if err != nil {
		return err
	}
	for _, c := range list {
		if x := s.lookupSKU(c.key); x != nil && x.reads.noteCommit(c.index) {
			s.wakeApplier(x)
		}
	}
	return nil
}

// cut removes the records after index (never committed: the primary does
// not hold them) and the snapshots beyond them.
func (s *Standby) cut(x *standbySKU, index uint64) error {
	s.closeLog(x)
	removed, err := wal.CutAfter(skudir.Dir(x.dir).WAL(), index, s.logger.With("sku", x.key.String()))
	if err != nil {
		return err
	}
	s.metrics.cuts.Add(float64(removed))
	x.reads.cutAfter(index)
	if err := removeSnapshots(x.dir, func(i uint64) bool { return i > index }); err != nil {
		return err
	}
	return s.reopen(x)
}

// dropCopy removes a copy's log and snapshots before a base copy.
func (s *Standby) dropCopy(x *standbySKU) error {
	s.closeLog(x)
	x.reads.reset()
	if err := os.RemoveAll(skudir.Dir(x.dir).WAL()); err != nil {
		return err
	}
	if err := removeSnapshots(x.dir, func(uint64) bool { return true }); err != nil {
		return err
	}
	return wal.SyncDir(x.dir)
}

// removeSnapshots removes the snapshot files whose index drop selects.
func removeSnapshots(dir string, drop func(index uint64) bool) error {
	snaps := skudir.Dir(dir).Snapshots()
	files, err := snapshot.List(snaps)
	if err != nil {
		return err
	}
	removed := false
	for _, f := range files {
		if drop(f.Index) {
			if err := os.Remove(f.Path); err != nil {
				return err
			}
			removed = true
		}
	}
	if removed {
		return wal.SyncDir(snaps)
	}
	return nil
}

// startInstall begins a base copy: its snapshot follows in chunks (none
// for a copy from record 1).
func (s *Standby) startInstall(x *standbySKU, index, size uint64, acks *acker) error {
	if size == 0 {
		return s.finishInstall(x, index, "", nil, acks)
	}
	return s.receive(x, &install{index: index, size: size, base: true})
}

// receive starts receiving a snapshot into a temporary file of the SKU's
// snapshots folder (removed by the next recovery if a crash leaves it).
func (s *Standby) receive(x *standbySKU, in *install) error {
	snaps := skudir.Dir(x.dir).Snapshots()
	if err := os.MkdirAll(snaps, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(snaps, snapshot.Name(in.index)+".*.tmp")
	if err != nil {
		return err
	}
	in.file = f
	x.install = in
	return nil
}

// offer starts receiving a snapshot the primary wrote, of records this
// copy holds.
func (s *Standby) offer(d *decoder) error {
	o, err := decodeInstall(d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	x := s.skus[o.key]
	s.mu.Unlock()
	if x == nil || x.log == nil || x.install != nil || o.index > x.log.LastIndex() {
		return fmt.Errorf("%w: a snapshot of %s at %d out of place", errProtocol, o.key, o.index)
	}
	return s.receive(x, &install{index: o.index, size: o.size, keepFrom: o.keepFrom})
}

// snapshotChunk writes a chunk of a base copy's snapshot; the last one
// installs it.
func (s *Standby) snapshotChunk(d *decoder, acks *acker) error {
	k, offset, chunk, err := decodeSnapshotChunk(d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	x := s.skus[k]
	s.mu.Unlock()
	if x == nil || x.install == nil || offset != x.install.written || offset+uint64(len(chunk)) > x.install.size {
		return fmt.Errorf("%w: a snapshot chunk of %s at %d out of place", errProtocol, k, offset)
	}
	in := x.install
	if _, err := in.file.Write(chunk); err != nil {
		return err
	}
	in.written += uint64(len(chunk))
	if in.written < in.size {
		return nil
	}
	x.install = nil
	path := in.file.Name()
	err = in.file.Sync()
	if cerr := in.file.Close(); err == nil {
		err = cerr
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(path)
	}
	switch {
	case err != nil:
	case in.base:
		err = s.finishInstall(x, in.index, path, b, acks)
	default:
		err = InstallSnapshot(standbyCopy{s: s, x: x, received: path}, in.index, in.keepFrom, b)
	}
	if err != nil {
		os.Remove(path) // gone already once installed
		return err
	}
	return nil
}

// finishInstall ends a base copy (FinishBase: the snapshot received at
// path, snap its bytes, put in place; the copy's log started after it)
// and acknowledges it.
func (s *Standby) finishInstall(x *standbySKU, index uint64, path string, snap []byte, acks *acker) error {
	if err := FinishBase(standbyCopy{s: s, x: x, received: path}, index, snap); err != nil {
		return err
	}
	s.metrics.bases.Inc()
	s.logger.Info("replica: base copy installed", "sku", x.key.String(), "snapshot_index", index)
	acks.note(x.key, index)
	return nil
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

// syncFile makes dir/name hold b (absent when b is empty), durably.
func syncFile(dir, name string, b []byte) error {
	old, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	exists := err == nil
	switch {
	case len(b) == 0 && !exists:
		return nil
	case len(b) == 0:
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
		return wal.SyncDir(dir)
	case exists && bytes.Equal(old, b):
		return nil
	}
	return writeFile(dir, name, b)
}

// acker sends a session's acknowledgements: the newest durable index of
// each SKU, coalesced (one entry per SKU at most pending: bounded by the
// SKUs). The goroutine that notes one writes it, unless another is
// writing, which then writes it too before it returns: no goroutine of
// its own to wake per batch. The log's goroutine that releases its
// waiters thus writes to the socket: a write that blocks (a primary that
// reads nothing) blocks that log's flushes, which wait for the same
// primary anyway, for at most writeTimeout, after which the connection
// is closed.
type acker struct {
	s       *Standby
	nc      net.Conn
	mu      sync.Mutex
	pending map[skuKey]uint64
	list    []ack
	writing bool
	stopped bool
}

func newAcker(s *Standby, nc net.Conn) *acker {
	return &acker{s: s, nc: nc, pending: make(map[skuKey]uint64)}
}

// note acknowledges k up to index. It is called on the goroutine that
// releases a log's waiters and waits for nothing but its own write.
func (a *acker) note(k skuKey, index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index > a.pending[k] {
		a.pending[k] = index
	}
	if a.writing {
		return
	}
	a.writing = true
	for len(a.pending) > 0 && !a.stopped {
		a.list = a.list[:0]
		for k, i := range a.pending {
			a.list = append(a.list, ack{key: k, index: i})
		}
		clear(a.pending)
		m := encodeAcks(a.s.epoch.Load(), a.list)
		a.mu.Unlock()
		a.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := a.nc.Write(m)
		a.mu.Lock()
		if err != nil {
			a.stopped = true
			a.nc.Close()
		}
	}
	a.writing = false
}

// stop ends the acknowledgements of a session: nothing more is written.
func (a *acker) stop() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.nc.Close()
}
