// Package actors runs one protoactor actor per SKU. Each actor alone owns
// its SKU's sku.Machine (token pool and reservations) and handles reserve,
// pay, close and release one at a time, so no lock and no read-modify-write
// race can oversell. Every state change is a record in the SKU's
// write-ahead log (package wal) and no reply, status read or rejection is
// released before every record it depends on is fsynced. Each actor hosts
// its SKU's shell (package actors/shell), which drives the SKU's core and
// files; the actor turns messages into the shell's inputs.
//
// Engine is the entry point: it finds every SKU under the data directory,
// recovers each from its log, and routes calls by campaign and SKU id (a
// reservation id names both).
package actors

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// Errors returned by Engine methods.
var (
	// ErrUnknownSKU: no SKU with that campaign and SKU id is defined.
	ErrUnknownSKU = errors.New("unknown campaign or SKU")
	// ErrNotFound: no durable reservation or request answers the lookup.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the SKU is recovering, failed to recover, or its log
	// failed (fail-stop); it acknowledges nothing until it has recovered
	// from disk again (Config.LogFailureRetry).
	ErrUnavailable = core.ErrUnavailable
	// ErrResultUnknown: the call was decided, then the SKU's log failed
	// (a write or fsync error) before its records were known durable: they
	// may or may not be on disk, so the command may or may not stand. The
	// SKU is unavailable (ErrUnavailable) until it recovers from disk;
	// after that, reading the reservation or the request_id tells. (A call
	// the failed SKU never decided gets ErrUnavailable: nothing was done.)
	ErrResultUnknown = core.ErrResultUnknown
	// ErrBusy: the SKU's inbox holds Config.InboxMax calls already; the
	// call was refused at once, nothing was decided. Retry later (HTTP:
	// 429 QUEUE_FULL).
	ErrBusy = errors.New("SKU busy: its inbox is full")
	// ErrInvalidArgument: a malformed id or amount.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the engine is closed.
	ErrClosed = errors.New("engine closed")
	// ErrTooManySKUs: a new SKU would take the engine beyond
	// Config.MaxSKUs (Define, MakeRoom: nothing was created), or the data
	// dir already holds more SKUs than that (Open: nothing was started).
	ErrTooManySKUs = errors.New("too many SKUs for this engine")
	// ErrForeignDataDir: Open found, where a SKU's log would be, a folder
	// of another program's files.
	ErrForeignDataDir = errors.New("not a seckill data dir")
	// ErrWrongCell: the user belongs to another cell of a celled SKU (the
	// frozen cell map says which; package cells). HTTP: 421 WRONG_CELL.
	ErrWrongCell = errors.New("the user belongs to another cell")
)

// Limits of an Engine's SKUs and of the file operations they run at once.
// Each SKU holds one file descriptor at rest (its log's tail segment: see
// package wal); a file operation in progress (a recovery, a snapshot being
// written, a log truncation, a new SKU's folder) holds one more at a time
// (see wal/README.md): an engine holds at most
// MaxSKUs + FileOperationsMax descriptors for its SKUs.
const (
	// DefaultMaxSKUs is Config.MaxSKUs when zero. A SKU at rest costs one
	// file descriptor, three goroutines (its actor's mailbox, its log's
	// flusher and releaser) and ~50 KB of memory with few reservations (its
	// reservations and its log's tail segment, up to 2 x WAL.SegmentSize
	// when busy, come on top): 10,000 of them ~0.5 GB and 10,000
	// descriptors. seckilld sets it from the open-files limit (--max-skus).
	DefaultMaxSKUs = 10_000
	// RecoveriesMax bounds the SKUs that recover at once (each one
	// opening, repairing and fsyncing its log, reading a snapshot): at
	// Open, and later after their logs failed (a full disk fails every log
	// at once). The two never overlap: no log fails before Open returns.
	RecoveriesMax = skudir.AtOnce
	// SnapshotWritersMax bounds the snapshot files written at once, over
	// every SKU of the engine (SKUs defined together snapshot together);
	// a snapshot waits for a writer.
	SnapshotWritersMax = 4
	// TruncationsMax bounds the logs truncated at once after a snapshot; a
	// truncation that finds none free is left to the SKU's next snapshot.
	TruncationsMax = 4
	// FileOperationsMax is the most file operations an engine runs at once
	// beyond its SKUs' logs: the above, plus the SKUs created at once (one
	// list of definitions at a time, skudir.AtOnce of its SKUs: DefineAll)
	// and one SKU restarted after a panic.
	FileOperationsMax = RecoveriesMax + SnapshotWritersMax + TruncationsMax + skudir.AtOnce + 1
)

// Config configures an Engine. Zero fields take the defaults named.
type Config struct {
	// DataDir holds one folder per SKU: <DataDir>/<campaign>/<sku>/wal.
	DataDir string
	// Fsync is wal.FsyncAlways unless a benchmark asks otherwise.
	Fsync wal.FsyncMode
	// Clock is the time source for decisions (default time.Now). It is
	// written into every record; replay never reads it.
	Clock func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Rand is the source of each SKU's reservation id key, drawn at its
	// first definition (default crypto/rand.Reader; tests fix it).
	Rand io.Reader
	// Registerer receives the engine's metrics (nil: none registered).
	Registerer prometheus.Registerer
	// ExpiryInterval is the period of the tick loop (default 100ms), which
	// calls Engine.Tick with Clock: expiry, snapshots, the recovery of a
	// failed log, rates. Expiry is decided by expire_at; the tick only
	// makes it prompt. The recovery backoff is as precise as this period.
	ExpiryInterval time.Duration
	// ManualTick turns the tick loop off: time reaches the SKUs' timers
	// only through the caller's Engine.Tick (tests step it).
	ManualTick bool
	// InboxMax bounds the calls waiting in each SKU's inbox (default
	// DefaultInboxMax): a call beyond it is refused at once with ErrBusy,
	// never queued and never blocking its caller.
	InboxMax int
	// ExpiryBatch bounds the reservations one expiry step closes (default 1024).
	ExpiryBatch int
	// DrawBatch bounds the records one round of a lottery draw records
	// (default sku.DrawBatch, at most sku.DrawBatch): each round is one
	// group commit, and the SKU answers other calls between rounds.
	DrawBatch int
	// DrawPause is the pause between two rounds of a lottery draw
	// (default 0: none): it spreads a large draw's group commits over
	// time. The engine's tick (ExpiryInterval) records a round too, so a
	// draw of n rounds takes about n / (1/DrawPause + 1/ExpiryInterval).
	DrawPause time.Duration
	// WAL tunes the logs; Fsync above overrides WAL.Fsync.
	WAL wal.Options
	// SnapshotEvery: a SKU snapshots its state once this many records were
	// appended since its last snapshot (default DefaultSnapshotEvery;
	// negative: never by count). Checked on every expiry tick.
	SnapshotEvery int
	// SnapshotInterval: a SKU with new records snapshots at least this
	// often (default DefaultSnapshotInterval; negative: never by time).
	SnapshotInterval time.Duration
	// SnapshotKeep is how many snapshots each SKU keeps (default
	// DefaultSnapshotKeep); the log is truncated up to the oldest one kept.
	SnapshotKeep int
	// LogFailureRetry is the first wait before a SKU whose log failed
	// (fail-stop) recovers from disk again; it doubles up to
	// core.MaxLogFailureRetry while recovery fails (default 1 s;
	// negative: never, the SKU stays unavailable until the engine
	// restarts). A SKU whose first recovery failed is retried the same
	// way. Recoveries are driven by Tick.
	LogFailureRetry time.Duration
	// MaxSKUs is the most SKUs the engine holds, counted as SKU folders in
	// DataDir (defined, being defined, or left undefined by a crash
	// between a SKU's folder and its definition): default DefaultMaxSKUs.
	// A Define beyond it fails with ErrTooManySKUs before any folder is
	// made; Open fails with it when DataDir already holds more.
	MaxSKUs int
	// FeedRetainRecords holds back the truncation of each SKU's log after
	// a snapshot so that its newest this-many records stay for feed
	// consumers (0: none; at most feed.MaxRetainRecords).
	FeedRetainRecords uint64
	// FeedRetainAge holds back truncation so that records appended within
	// this age stay (0: none; at most feed.MaxRetainAge). They are removed
	// at the first snapshot after they age out.
	FeedRetainAge time.Duration
	// Replication, when set, replicates every SKU's log (package
	// replica/stream): a log opened Replicated commits only what the
	// standbys it waits for hold, and its truncation is held back for
	// them. Nil: no replication.
	Replication Replication
	// Pending keeps the definitions of many SKUs durable while they are
	// defined (pending.go): nil, the data dir's pending-define-* files; a
	// replica set's primary gives the set's own store, so that the next
	// primary finishes them.
	Pending PendingStore

	metrics *engineMetrics
	// recoveries, snapshotWriters and truncations are semaphores
	// (RecoveriesMax, SnapshotWritersMax, TruncationsMax): a slot is a
	// value sent, freed by a receive.
	recoveries      slots
	snapshotWriters slots
	truncations     slots
}

func (c *Config) fill() {
	if c.DataDir == "" {
		c.DataDir = "data"
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.ExpiryInterval <= 0 {
		c.ExpiryInterval = 100 * time.Millisecond
	}
	if c.ExpiryBatch <= 0 {
		c.ExpiryBatch = 1024
	}
	if c.LogFailureRetry == 0 {
		c.LogFailureRetry = time.Second
	}
	if c.MaxSKUs <= 0 {
		c.MaxSKUs = DefaultMaxSKUs
	}
	if c.InboxMax <= 0 {
		c.InboxMax = DefaultInboxMax
	}
	if c.Pending == nil {
		c.Pending = dirPending{dir: c.DataDir}
	}
	c.metrics = newEngineMetrics(c.Registerer)
	c.recoveries = make(slots, RecoveriesMax)
	c.snapshotWriters = make(slots, SnapshotWritersMax)
	c.truncations = make(slots, TruncationsMax)
}

// recoverySlot waits for one of the engine's RecoveriesMax recovery slots
// and returns its release. A SKU recovering after its log failed takes one
// on its actor, which answers nothing meanwhile (it would answer
// UNAVAILABLE): a few milliseconds per recovery ahead of it.
func (c *Config) recoverySlot() (release func()) { return c.recoveries.acquire() }

// slots is a counting semaphore: a slot is a value sent, freed by a
// receive.
type slots chan struct{}

// acquire waits for a slot and returns its release.
func (s slots) acquire() (release func()) {
	s <- struct{}{}
	return func() { <-s }
}

// TryAcquire takes a slot if one is free (shell.Slots).
func (s slots) TryAcquire() bool {
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

// Release frees a slot taken (shell.Slots).
func (s slots) Release() { <-s }

func (c *Config) walOptions() wal.Options {
	o := c.WAL
	o.Fsync = c.Fsync
	o.Logger = c.Logger
	o.Observer = c.metrics
	return o
}

type skuKey struct{ campaignID, skuID string }

// Engine owns the actor system and one actor per SKU.
type Engine struct {
	cfg    Config
	system *actor.ActorSystem

	// skus maps every SKU to its handle; every call reads it. A typed
	// map under a read lock: sync.Map hashes its any keys through the
	// runtime's generic type hash, ~3% of a reservation's CPU.
	skusMu sync.RWMutex
	skus   map[skuKey]*SKU
	// lastHandle is the SKU handle last looked up in skus: a hot SKU's
	// calls find it with one atomic load and a compare of its ids, not a
	// read lock (a write to a cache line every core shares) and a hash of
	// both ids. Cleared, under skusMu, with its entry in skus.
	lastHandle atomic.Pointer[SKU]
	mu         sync.Mutex // guards closed
	closed     bool
	create     sync.Mutex // serialises the creation of new SKUs; guards the two below

	// The SKU folders beside those in skus, counted against MaxSKUs
	// (room.go): held are promised by MakeRoom to a definition in
	// progress, leftover exist in DataDir without a definition (Open
	// forgot them). A key leaves either when its SKU is created.
	held     map[skuKey]struct{}
	leftover map[skuKey]struct{}

	stop   chan struct{}
	ticker sync.WaitGroup // the tick loop

	// Tick's memory, under tickMu: each SKU's last tick and rate figures,
	// and when the rates were last updated.
	tickMu   sync.Mutex
	ticked   map[*SKU]tickMark
	rates    map[*SKU]*rateTracker
	lastRate time.Time

	unlock func() error // releases the data dir's lock (datadirlock.go)

	// purchases holds the purchase registry of each campaign whose
	// purchase_limit is "campaign" (purchases.go), created on first use.
	purchasesMu sync.RWMutex
	purchases   map[string]*purchases
	// defining holds DefineAll's campaign locks (definelocks.go): its
	// checks (that a campaign's SKUs agree on purchase_limit) hold until
	// its list is defined.
	defining campaignLocks
	// definitionGroup makes the group DefineAll runs a list in:
	// newDefinitionGroup, or a test's twin that orders the definitions.
	definitionGroup func(limit int) definitionGroup
	// stating is held shared by each definition from MakeRoom to its
	// release and alone by FinishPending while it finishes a list, so
	// that a definition an operator states is never interleaved with the
	// finishing of a list it supersedes: one of the two runs whole first
	// (a replica set's new primary finishes lists while it serves).
	stating sync.RWMutex
	// cut holds the pending lists of definitions begun and unfinished
	// (pending.go: keepCut), each with the campaigns it defines; loaded
	// are those found at start that FinishPending has yet to finish, and
	// didLoad says LoadPending read them.
	cutMu   sync.Mutex
	cut     map[string][]string
	loaded  []PendingList
	didLoad bool
}

// Open recovers every SKU found under cfg.DataDir, RecoveriesMax at a
// time, and returns when each has replayed its log. A SKU whose log cannot
// be recovered (mid-log corruption) is kept, answering ErrUnavailable, and
// reported in the log; Open itself fails on I/O errors of the data
// directory, when another engine holds the data dir (ErrDataDirLocked: the
// Engine holds the lock of the data dir itself until Close), and when the data
// dir holds more SKU folders than cfg.MaxSKUs (ErrTooManySKUs, before any
// SKU is started: rather than run with SKUs that cannot open their files)
// or another program's files where a SKU's log would be
// (ErrForeignDataDir, before any SKU is started).
func Open(cfg Config) (*Engine, error) {
	cfg.fill()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, err
	}
	unlock, err := LockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	found, err := discover(cfg.DataDir)
	if err != nil {
		_ = unlock()
		return nil, err
	}
	if len(found) > cfg.MaxSKUs {
		_ = unlock()
		return nil, fmt.Errorf("%w: %s holds %d SKUs, more than the limit of %d (seckilld: --max-skus)",
			ErrTooManySKUs, cfg.DataDir, len(found), cfg.MaxSKUs)
	}
	logger := cfg.Logger
	e := &Engine{
		cfg:      cfg,
		system:   actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger.With("lib", "protoactor") })),
		stop:     make(chan struct{}),
		skus:     make(map[skuKey]*SKU),
		held:     make(map[skuKey]struct{}),
		leftover: make(map[skuKey]struct{}),
		ticked:   make(map[*SKU]tickMark),
		rates:    make(map[*SKU]*rateTracker),
		unlock:   unlock,

		purchases: make(map[string]*purchases),

		definitionGroup: newDefinitionGroup,
	}
	// A sliding window of RecoveriesMax: the oldest recovery is waited
	// for before the next starts.
	started := make([]*SKU, 0, len(found))
	for i, k := range found {
		if i >= RecoveriesMax {
			e.settle(started[i-RecoveriesMax])
		}
		started = append(started, e.spawn(k))
	}
	for _, h := range started[max(0, len(started)-RecoveriesMax):] {
		e.settle(h)
	}
	if !cfg.ManualTick {
		e.ticker.Add(1)
		go e.tickLoop()
	}
	return e, nil
}

// settle waits for a SKU that Open started to recover. A log created but
// never given its definition is forgotten (a later Define appends to it);
// its folder stays, and still counts against MaxSKUs.
func (e *Engine) settle(h *SKU) {
	<-h.ready
	if h.readyErr != nil || h.Stats().Definition.CampaignID != "" {
		return
	}
	e.system.Root.Stop(h.pid)
	k := skuKey{h.campaignID, h.skuID}
	e.create.Lock() // the count (room.go) sees it in skus or in leftover
	e.skusMu.Lock()
	e.forgetLocked(k)
	e.skusMu.Unlock()
	e.leftover[k] = struct{}{}
	e.create.Unlock()
	e.tickMu.Lock()
	delete(e.ticked, h)
	delete(e.rates, h)
	e.tickMu.Unlock()
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// discover lists the SKUs of a data dir. A SKU folder whose wal folder
// holds another program's files (wal.Foreign) fails it: the data dir is
// not seckilld's (a folder holding an etcd data dir, say), and adopting
// the folder would write a log segment among that program's files.
func discover(dir string) ([]skuKey, error) {
	dirs, err := skudir.List(dir)
	if err != nil {
		return nil, err
	}
	keys := make([]skuKey, len(dirs))
	for i, d := range dirs {
		if files, foreign := wal.Foreign(d.WAL()); foreign {
			return nil, fmt.Errorf("%w: %s holds %d files and no seckill log segment (a name of 20 digits): another program's data, such as etcd's member/wal; give seckilld a data dir of its own",
				ErrForeignDataDir, d.WAL(), files)
		}
		keys[i].campaignID, keys[i].skuID = d.IDs()
	}
	return keys, nil
}

// spawn starts the actor of one SKU; it recovers on Started.
func (e *Engine) spawn(k skuKey) *SKU {
	h := &SKU{
		campaignID: k.campaignID, skuID: k.skuID,
		dir:    skudir.Of(e.cfg.DataDir, k.campaignID, k.skuID),
		engine: e,
		ready:  make(chan struct{}),
	}
	h.in.max = e.cfg.InboxMax
	h.unavailable.Store(true)
	cfg := &e.cfg
	// The mailbox is bounded (mailboxMax, mailbox.go: every sender is
	// coalesced); protoactor's own messages are not counted. Calls wait in
	// the inbox, bounded by Config.InboxMax.
	h.box = newPinnedMailbox(h)
	props := actor.PropsFromProducer(func() actor.Actor { return &skuActor{h: h, cfg: cfg} },
		actor.WithMailbox(func() actor.Mailbox { return h.box }))
	h.pid = e.system.Root.Spawn(props)
	e.skusMu.Lock()
	e.forgetLocked(k) // none there: a SKU is spawned once per key
	e.skus[k] = h
	e.skusMu.Unlock()
	return h
}

// tickLoop calls Tick every ExpiryInterval with the configured clock,
// until Close.
func (e *Engine) tickLoop() {
	defer e.ticker.Done()
	t := time.NewTicker(e.cfg.ExpiryInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		}
		e.Tick(e.cfg.Clock())
	}
}

// Tick runs every SKU's timers at now: expiry, snapshots by count and by
// age, the recovery of a SKU whose log failed, and the rate figures (once
// now is a second past the last). Like raft's Tick, it is the only way time
// reaches them: the background loop calls it every Config.ExpiryInterval
// with Config.Clock (unless Config.ManualTick), and a test steps it. A SKU
// gets a tick message when it appended records since its last one, when a
// reservation of it is due to expire, while it is unavailable (a recovery
// may be due), or at least every idleTick of now: an engine of 10,000
// quiet SKUs then sends 10,000 ticks a second, not 100,000 (each wakes the
// SKU's goroutine). A SKU whose last tick is still in its mailbox (a busy
// or stuck actor) gets none: ticks never pile up. Tick returns once the messages are sent; a message
// the same goroutine sends a SKU later (any call) is handled after its
// tick. It does nothing after Close.
func (e *Engine) Tick(now time.Time) {
	if e.isClosed() {
		return
	}
	e.tickMu.Lock()
	defer e.tickMu.Unlock()
	rate := !e.lastRate.IsZero() && (now.Sub(e.lastRate) >= time.Second || now.Before(e.lastRate))
	if rate || e.lastRate.IsZero() {
		e.lastRate = now
	}
	nowMs := now.UnixMilli()
	for _, h := range e.SKUs() {
		var index uint64
		if l := h.log.Load(); l != nil {
			index = l.LastIndex()
		}
		m, ok := e.ticked[h]
		due := !ok || index != m.index || h.nextExpiry.Load() <= nowMs || h.unavailable.Load() ||
			now.Sub(m.at) >= idleTick || now.Before(m.at)
		if due && h.tickPending.CompareAndSwap(false, true) { // one tick in its mailbox at a time
			e.system.Root.Send(h.pid, tick{now: now})
			e.ticked[h] = tickMark{index: index, at: now}
		}
		if rate {
			rt := e.rates[h]
			if rt == nil {
				rt = &rateTracker{}
				e.rates[h] = rt
			}
			rt.tick(h, now)
		}
	}
}

// idleTick is the longest a SKU goes without a tick (its snapshot by
// interval, its request filter's growth).
const idleTick = time.Second

// tickMark is what Tick remembers of a SKU's last tick.
type tickMark struct {
	index uint64    // the log's last index when it was sent
	at    time.Time // the now it carried
}

// SKU returns the handle of a defined SKU, or nil. A SKU being created
// is not one until its definition is durable: before that it has no
// window, no counts and takes no calls, and callers (the ingress, the
// status route) must answer as for an unknown SKU, not from its empty
// figures. A SKU whose recovery failed is returned (it answers
// ErrUnavailable), whatever its log still says.
func (e *Engine) SKU(campaignID, skuID string) *SKU {
	if h := e.handle(campaignID, skuID); h != nil && h.defined() {
		return h
	}
	return nil
}

// handle returns the handle of a SKU in any state (being created,
// recovering, defined), or nil.
func (e *Engine) handle(campaignID, skuID string) *SKU {
	if h := e.lastHandle.Load(); h != nil && h.skuID == skuID && h.campaignID == campaignID {
		return h
	}
	e.skusMu.RLock()
	h := e.skus[skuKey{campaignID, skuID}]
	if h != nil {
		e.lastHandle.Store(h) // under the read lock: a delete, under the write lock, clears it after
	}
	e.skusMu.RUnlock()
	return h
}

// forgetLocked removes the handle of k from skus. Under skusMu.
func (e *Engine) forgetLocked(k skuKey) {
	delete(e.skus, k)
	if h := e.lastHandle.Load(); h != nil && h.campaignID == k.campaignID && h.skuID == k.skuID {
		e.lastHandle.Store(nil)
	}
}

// SKUs returns every SKU handle, sorted by campaign and SKU id.
func (e *Engine) SKUs() []*SKU {
	e.skusMu.RLock()
	out := make([]*SKU, 0, len(e.skus))
	for _, h := range e.skus {
		out = append(out, h)
	}
	e.skusMu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].campaignID != out[j].campaignID {
			return out[i].campaignID < out[j].campaignID
		}
		return out[i].skuID < out[j].skuID
	})
	return out
}

// Close stops every actor after it has handled what is in its mailbox,
// flushes and fsyncs every log, and stops the actor system.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	// A SKU being created is spawned before the sweep below lists the
	// SKUs; one not spawned yet sees closed (spawnNew).
	e.create.Lock()
	e.create.Unlock() // an empty critical section: a barrier
	close(e.stop)
	e.ticker.Wait()
	for _, h := range e.SKUs() {
		if err := e.system.Root.PoisonFuture(h.pid).Wait(); err != nil {
			return fmt.Errorf("stopping %s/%s: %w", h.campaignID, h.skuID, err)
		}
	}
	e.system.Shutdown()
	// Only now that no actor can append: a SKU that would not stop keeps
	// the data dir locked (the error above).
	return e.unlock()
}
