package stream

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// Errors of the package.
var (
	// ErrStaleEpoch: a message, a hello or an epoch to begin is of a lower
	// epoch than the highest this replica has seen; it was refused.
	ErrStaleEpoch = errors.New("stream: stale epoch")
	// ErrClosed: the Primary or Standby is closed.
	ErrClosed = errors.New("stream: closed")
)

// DefaultMaxRetainRecords is PrimaryConfig.MaxRetainRecords when zero: the
// records of a SKU's log a primary keeps at most for a standby behind
// (~100 bytes a record: about 1 GB per SKU).
const DefaultMaxRetainRecords = 10_000_000

// PrimaryConfig configures NewPrimary.
type PrimaryConfig struct {
	// Set and Name are the replica set's name and this replica's.
	Set, Name string
	// Epoch is the epoch of this tenure (replica.Holding.Epoch), begun
	// on disk with BeginEpoch before the engine opened.
	Epoch uint64
	// DataDir is the engine's data dir.
	DataDir string
	// Listener is the replication address; standbys dial it. The Primary
	// closes it.
	Listener net.Listener
	// Strict never commits without a standby waited for (--sync-strict).
	Strict bool
	// MaxRetainRecords bounds the records of each SKU's log kept for a
	// standby behind (default DefaultMaxRetainRecords); a standby further
	// behind gets a base copy.
	MaxRetainRecords uint64
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the stream's metrics (nil: none).
	Registerer prometheus.Registerer
}

// Primary ships every SKU log of its engine to the standbys that connect
// to it, and commits each log's records once the standbys it waits for
// hold them (wal.Log.Confirm). It is the engine's actors.Replication.
type Primary struct {
	cfg     PrimaryConfig
	logger  *slog.Logger
	metrics *primaryMetrics

	// mu guards everything below; the flusher's Ship takes it briefly and
	// never waits under it.
	mu      sync.Mutex
	skus    map[skuKey]*primarySKU
	conns   map[string]*primaryConn // the standbys connected now, by name
	acked   map[string]map[skuKey]uint64
	lastAck map[string]time.Time
	beyond  map[string]map[skuKey]bool // standbys past MaxRetainRecords, logged once
	// seen are the standbys that ever connected; voidAfter, per standby
	// and SKU, the last record of a log opened again after a failure: the
	// records shipped after it before the failure were never written here,
	// and the log writes other records at their indexes in this same
	// epoch, so the standby's next copy begins with a cut there, and so
	// does each one after it until the standby took the cut (its hello
	// ends there, or it acknowledged the copy begun with it).
	seen      map[string]bool
	voidAfter map[string]map[skuKey]uint64
	standbys  *replica.Standbys // whom a commit waits for (Wait)
	closed    bool

	done chan struct{}
	wg   sync.WaitGroup
}

// primarySKU is one SKU log of the primary; it is the log's
// wal.DurableShipper.
type primarySKU struct {
	p       *Primary
	key     skuKey
	dir     string
	log     *wal.Log // nil until opened
	history replica.History
	// shipped is the last index handed to the flusher's Ship (or found in
	// the log when it opened): the records the standbys may hold.
	shipped uint64
	// confirmed is the highest index passed to log.Confirm.
	confirmed uint64
	// found is the last record the log held when it opened: records a
	// former primary may have acknowledged, not committed here until
	// confirmed (wal.Options.Replicated).
	found uint64
	// snapshot is the index of the newest snapshot written (0: none).
	snapshot uint64
	// last is the last batch shipped, as a message, for a connection
	// whose catch-up from disk reaches it while it is being written.
	last shippedBatch
	// told is the highest commit index sent to the standbys (msgCommit).
	told uint64
}

var _ wal.DurableShipper = (*primarySKU)(nil)

type shippedBatch struct {
	first, last uint64
	message     []byte
}

// NewPrimary starts accepting standbys on cfg.Listener. With no standby
// waited for (Wait), a record commits once durable here, unless Strict.
func NewPrimary(cfg PrimaryConfig) (*Primary, error) {
	if cfg.Listener == nil || cfg.DataDir == "" || cfg.Name == "" {
		return nil, errors.New("stream: PrimaryConfig needs Listener, DataDir and Name")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxRetainRecords == 0 {
		cfg.MaxRetainRecords = DefaultMaxRetainRecords
	}
	seen, err := ReadEpoch(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if seen > cfg.Epoch {
		return nil, fmt.Errorf("%w: primary of epoch %d, %s has seen %d", ErrStaleEpoch, cfg.Epoch, cfg.DataDir, seen)
	}
	if err := raiseEpoch(cfg.DataDir, cfg.Epoch); err != nil {
		return nil, err
	}
	p := &Primary{
		cfg:       cfg,
		logger:    cfg.Logger.With("replica_set", cfg.Set, "replica", cfg.Name, "epoch", cfg.Epoch),
		skus:      make(map[skuKey]*primarySKU),
		conns:     make(map[string]*primaryConn),
		acked:     make(map[string]map[skuKey]uint64),
		lastAck:   make(map[string]time.Time),
		beyond:    make(map[string]map[skuKey]bool),
		seen:      make(map[string]bool),
		voidAfter: make(map[string]map[skuKey]uint64),
		standbys:  replica.NewStandbys(nil, cfg.Strict),
		done:      make(chan struct{}),
	}
	p.metrics = newPrimaryMetrics(p, cfg.Registerer)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Replication returns what actors.Config.Replication takes: each SKU log
// opened Replicated with its Shipper, confirmed by the stream, its
// truncation held back for the standbys.
func (p *Primary) Replication() actors.Replication { return primaryHooks{p} }

// primaryHooks is the Primary as the engine sees it.
type primaryHooks struct{ p *Primary }

// LogOptions makes the log Replicated with the SKU's Shipper, its batches
// at most wal.DefaultMaxBatchBytes: one batch is one message
// (maxMessageSize).
func (h primaryHooks) LogOptions(campaignID, skuID string, o wal.Options) wal.Options {
	if o.MaxBatchBytes <= 0 || o.MaxBatchBytes > wal.DefaultMaxBatchBytes {
		o.MaxBatchBytes = wal.DefaultMaxBatchBytes
	}
	o.Replicated = true
	o.Shipper = h.p.sku(skuKey{campaignID, skuID})
	return o
}

func (h primaryHooks) Opened(campaignID, skuID string, skuDir skudir.Dir, log *wal.Log) error {
	return h.p.opened(skuKey{campaignID, skuID}, skuDir.String(), log)
}

func (h primaryHooks) RetainFrom(campaignID, skuID string) uint64 {
	return h.p.retainFrom(skuKey{campaignID, skuID})
}

func (h primaryHooks) SnapshotWritten(campaignID, skuID string, index uint64) {
	h.p.snapshotWritten(skuKey{campaignID, skuID}, index)
}

// snapshotWritten has every connection's pump ship a new snapshot.
func (p *Primary) snapshotWritten(k skuKey, index uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.skus[k]
	if s == nil || index <= s.snapshot {
		return
	}
	s.snapshot = index
	for _, c := range p.conns {
		c.wakeUp()
	}
}

// sku returns the SKU's state, created on first use.
func (p *Primary) sku(k skuKey) *primarySKU {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.skus[k]
	if s == nil {
		s = &primarySKU{p: p, key: k}
		p.skus[k] = s
	}
	return s
}

// opened takes a SKU's log, newly opened: its epoch history gets this
// epoch (a new SKU's starts at (epoch, 1)), and every standby starts
// copying it. A log opened again after a failure may hold fewer records
// than were shipped: the standbys' connections are closed, and each one's
// hello decides what it keeps (a cut) as at any connection.
func (p *Primary) opened(k skuKey, dir string, log *wal.Log) error {
	h, err := beginHistory(dir, p.cfg.Epoch, log.LastIndex())
	if err != nil {
		return fmt.Errorf("stream: %s: %w", k, err)
	}
	snaps, err := snapshot.List(skudir.Dir(dir).Snapshots())
	if err != nil {
		return fmt.Errorf("stream: %s: %w", k, err)
	}
	s := p.sku(k)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	replaced := s.log != nil
	s.log, s.dir, s.history = log, dir, h
	s.shipped, s.confirmed, s.found, s.last, s.told = log.LastIndex(), 0, log.LastIndex(), shippedBatch{}, 0
	if n := len(snaps); n > 0 {
		s.snapshot = snaps[n-1].Index
	}
	if replaced {
		// What the standbys acknowledged beyond this log's last record
		// was shipped and never written here: it commits nothing, and each
		// standby's next copy cuts it.
		last := log.LastIndex()
		for _, m := range p.acked {
			if a, ok := m[k]; ok {
				m[k] = min(a, last)
			}
		}
		for name := range p.seen {
			m := p.voidAfter[name]
			if m == nil {
				m = make(map[skuKey]uint64)
				p.voidAfter[name] = m
			}
			if v, ok := m[k]; !ok || last < v {
				m[k] = last
			}
		}
		for name, c := range p.conns {
			p.logger.Warn("replica: a SKU log was opened again; its standby reconnects to agree on its records",
				"sku", k.String(), "standby", name)
			c.closeLocked()
		}
	} else {
		for _, c := range p.conns {
			c.startLocked(s)
		}
	}
	p.commitLocked(s)
	return nil
}

// Ship implements wal.Shipper, on the log's flusher goroutine: the batch
// goes to every connection that is live on this SKU, copied once into a
// message. A connection whose queue is full falls back to catching up
// from disk. It never waits.
func (s *primarySKU) Ship(b *wal.Batch) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	s.shipped = b.LastIndex()
	s.last = shippedBatch{}
	if len(p.conns) > 0 {
		enc := newRecords(p.cfg.Epoch, s.key, b.FirstIndex(), b.Size()+4*b.Len())
		for i := 0; i < b.Len(); i++ {
			enc.add(b.Frame(i))
		}
		s.last = shippedBatch{first: b.FirstIndex(), last: b.LastIndex(), message: enc.done()}
		for _, c := range p.conns {
			c.shipLocked(s)
		}
	}
	p.commitLocked(s)
}

// commitLocked confirms what the standbys waited for hold (replica.Standbys
// owns the rule): at most what was shipped; nothing in strict mode with
// none waited for.
func (p *Primary) commitLocked(s *primarySKU) {
	if s.log == nil || p.closed {
		return // a closed primary commits nothing more
	}
	index, ok := p.standbys.Commit(s.shipped, func(name string) uint64 { return p.acked[name][s.key] })
	if ok && index > s.confirmed {
		s.confirmed = index
		s.log.Confirm(index)
		p.tellCommitLocked(s, min(index, s.log.DurableIndex()))
	}
}

// Durable implements wal.DurableShipper, on the log's flusher goroutine
// once the records through index are durable here: the log's commit index
// is then min(index, the index confirmed).
func (s *primarySKU) Durable(index uint64) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.log != nil && !p.closed {
		p.tellCommitLocked(s, min(index, s.confirmed))
	}
}

// tellCommitLocked sends the standbys a SKU log's commit index as it
// rises (msgCommit): a standby serves reads of the records up to it. The
// log's commit index is min(durable here, confirmed), so it rises only at
// a fsync here (Durable) or a confirmation (commitLocked): the standbys
// hear of each rise, once per batch at most, not per record.
func (p *Primary) tellCommitLocked(s *primarySKU, commit uint64) {
	if commit <= s.told {
		return
	}
	s.told = commit
	for _, c := range p.conns {
		c.noteCommitLocked(s, commit)
	}
}

// Wait sets the standbys every commit waits for from now on (the role
// loop's order, replica.Standbys: wait for a standby before publishing
// it; unpublish it before no longer waiting for it).
func (p *Primary) Wait(standbys []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standbys = replica.NewStandbys(slices.Clone(standbys), p.cfg.Strict)
	for _, s := range p.skus {
		p.commitLocked(s)
	}
	for _, c := range p.conns {
		c.wakeUp() // a base copy held while its standby was waited for
	}
}

// ackLocked records a standby's acknowledgement of a SKU's durable index.
func (p *Primary) ackLocked(name string, k skuKey, index uint64) {
	p.lastAck[name] = time.Now()
	p.setAckedLocked(name, k, index)
}

// setAckedLocked records what a standby holds durably of a SKU and
// commits what that allows.
func (p *Primary) setAckedLocked(name string, k skuKey, index uint64) {
	m := p.acked[name]
	if m == nil {
		m = make(map[skuKey]uint64)
		p.acked[name] = m
	}
	m[k] = index
	if s := p.skus[k]; s != nil {
		p.commitLocked(s)
		if c := p.conns[name]; c != nil && c.skus[k] != nil {
			c.skus[k].sent.acked(index)
		}
	}
}

// retainFrom returns the first record of a SKU the standbys connected or
// waited for still need (their acknowledged index + 1), bounded by
// MaxRetainRecords; a standby further behind is logged once and gets a
// base copy when it needs the records.
func (p *Primary) retainFrom(k skuKey) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.skus[k]
	if s == nil || s.log == nil {
		return 0
	}
	var bound uint64 = 1
	if d := s.log.DurableIndex(); d+1 > p.cfg.MaxRetainRecords {
		bound = d + 1 - p.cfg.MaxRetainRecords
	}
	var need uint64
	for _, name := range p.heldForLocked() {
		want := p.acked[name][k] + 1
		if want < bound {
			p.beyondLocked(name, k, want, bound)
			want = bound
		}
		if need == 0 || want < need {
			need = want
		}
	}
	return need
}

// heldForLocked lists the standbys truncation waits for: connected or
// waited for.
func (p *Primary) heldForLocked() []string {
	names := slices.Clone(p.standbys.Waited())
	for name := range p.conns {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

func (p *Primary) beyondLocked(name string, k skuKey, want, bound uint64) {
	m := p.beyond[name]
	if m == nil {
		m = make(map[skuKey]bool)
		p.beyond[name] = m
	}
	if m[k] {
		return
	}
	m[k] = true
	p.metrics.beyondRetention.WithLabelValues(name).Inc()
	p.logger.Warn("replica: a standby fell behind the log kept for it (MaxRetainRecords); it will need a base copy",
		"standby", name, "sku", k.String(), "needs_from", want, "kept_from", bound, "max_retain_records", p.cfg.MaxRetainRecords)
}

// StandbyStatus is what the primary knows of one standby.
type StandbyStatus struct {
	Name      string
	Connected bool
	// CaughtUp: connected, and it holds every record committed or
	// confirmed so far in every SKU, and every record the log held when
	// this primary opened it (it may be published: CaughtUp).
	CaughtUp bool
	LastAck  time.Time
	// LagRecords is the sum over SKUs of the primary's last shipped index
	// less the standby's acknowledged one.
	LagRecords uint64
	// LagMillis is how long ago the oldest record it has not acknowledged
	// was sent to it, over every SKU (0 while it holds every record
	// shipped); for a standby not connected, since its last
	// acknowledgement.
	LagMillis int64
	// Waited: a commit waits for it (Wait).
	Waited bool
	// NeedsBase: a SKU's copy needs a base copy, held while it is waited
	// for (MayBaseCopy); it is not caught up meanwhile.
	NeedsBase bool
}

// Standbys returns the status of every standby connected or waited for,
// by name.
func (p *Primary) Standbys() []StandbyStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	names := p.heldForLocked()
	for name := range p.acked {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]StandbyStatus, 0, len(names))
	for _, name := range names {
		c := p.conns[name]
		st := StandbyStatus{Name: name, Connected: c != nil, LastAck: p.lastAck[name],
			Waited: slices.Contains(p.standbys.Waited(), name)}
		caughtUp := c != nil
		if c != nil {
			for _, cs := range c.skus {
				st.NeedsBase = st.NeedsBase || cs.heldBase
			}
		}
		var behindSince time.Time
		for k, s := range p.skus {
			if s.log == nil {
				continue
			}
			a := p.acked[name][k]
			if a < s.shipped {
				st.LagRecords += s.shipped - a
				if c != nil && c.skus[k] != nil {
					if at, ok := c.skus[k].sent.oldest(); ok && (behindSince.IsZero() || at.Before(behindSince)) {
						behindSince = at
					}
				}
			}
			if !CaughtUp(a, max(s.confirmed, s.log.CommitIndex()), s.found) {
				caughtUp = false
			}
		}
		st.CaughtUp = caughtUp && !st.NeedsBase
		switch {
		case st.LagRecords == 0:
		case c != nil && !behindSince.IsZero():
			st.LagMillis = now.Sub(behindSince).Milliseconds()
		case !st.LastAck.IsZero():
			st.LagMillis = now.Sub(st.LastAck).Milliseconds()
		}
		out = append(out, st)
	}
	return out
}

// Close stops accepting, closes every standby's connection and waits for
// the stream's goroutines. The engine's logs are the engine's: close the
// engine first (its records then commit no further).
func (p *Primary) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	for _, c := range p.conns {
		c.closeLocked()
	}
	p.mu.Unlock()
	err := p.cfg.Listener.Close()
	p.wg.Wait()
	p.metrics.unregister()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// accept takes the standbys' connections until Close.
func (p *Primary) accept() {
	defer p.wg.Done()
	for {
		nc, err := p.cfg.Listener.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.logger.Warn("replica: accept failed", "err", err)
			select {
			case <-p.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(nc)
		}()
	}
}
