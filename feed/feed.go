package feed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// Bounds and defaults of a reader (Params).
const (
	// MaxPage bounds the events of one page (Params.Limit).
	MaxPage = 1000
	// DefaultLookupTimeout bounds a page's reservation look-ups when
	// Params.LookupTimeout is zero.
	DefaultLookupTimeout = 3 * time.Second
	// DefaultRelist is how often a campaign's reader lists its SKUs again
	// when Params.Relist is zero.
	DefaultRelist = 15 * time.Second
)

// Feed is the event feed of the SKUs of one Source: it opens readers of a
// SKU's feed (Open) and of a campaign's (OpenCampaign), and the export a
// consumer resynchronises from (Export). Readers of one SKU share the
// events it encoded (the cache) and its history chain; a Feed is safe for
// concurrent use.
type Feed struct {
	src    Source
	caches *eventCaches
	chains *chainCache
	// definitions wakes campaign readers when a SKU is defined.
	definitions definitions
	// waiting counts readers waiting for a durable record.
	waiting atomic.Int64
	// wakeups counts why waiting readers woke, by WakeCause.
	wakeups [WakeCauses]atomic.Int64
}

// New returns the feed of the SKUs src runs.
func New(src Source) *Feed {
	return &Feed{src: src, caches: newEventCaches(), chains: newChainCache()}
}

// Waiting returns the readers waiting for a durable record now.
func (f *Feed) Waiting() int64 { return f.waiting.Load() }

// WakeCause is why a waiting reader woke: what idle consumers cost (a long
// poll with nothing to read wakes once, at its wait; a stream once a
// heartbeat).
type WakeCause int

// Wake causes.
const (
	WokeByRecord     WakeCause = iota // a group commit of a SKU it reads
	WokeByDefinition                  // a SKU added to the campaign it reads
	WokeByDeadline                    // its wait ended: a long poll's wait=, a stream's heartbeat
	WokeByShutdown                    // its context ended
	WakeCauses
)

// String is the cause's metric label.
func (c WakeCause) String() string {
	return [WakeCauses]string{"record", "definition", "deadline", "shutdown"}[c]
}

// Wakeups returns how often waiting readers woke for cause c.
func (f *Feed) Wakeups(c WakeCause) int64 { return f.wakeups[c].Load() }

func (f *Feed) woke(c WakeCause) { f.wakeups[c].Add(1) }

// SKUDefined tells the feed that a SKU was defined: campaign readers
// waiting list their campaign's SKUs again at once (they do anyway every
// Params.Relist).
func (f *Feed) SKUDefined() { f.definitions.changed() }

// Params are a reader's parameters.
type Params struct {
	// Limit bounds the events of a page, 1..MaxPage (0: MaxPage).
	Limit int
	// Types are the event types sent (EventType); nil: every type but
	// seckill.request.rejected.
	Types map[string]bool
	// LookupTimeout bounds the reservation look-ups of a page (0:
	// DefaultLookupTimeout).
	LookupTimeout time.Duration
	// Relist is how often a campaign's reader lists its SKUs again, so
	// that SKUs defined without SKUDefined are read (0: DefaultRelist).
	Relist time.Duration
}

func (p Params) filled() Params {
	if p.Limit <= 0 || p.Limit > MaxPage {
		p.Limit = MaxPage
	}
	if p.LookupTimeout <= 0 {
		p.LookupTimeout = DefaultLookupTimeout
	}
	if p.Relist <= 0 {
		p.Relist = DefaultRelist
	}
	return p
}

// wanted reports whether an event of type t goes to this consumer.
func (p *Params) wanted(t string) bool {
	if p.Types != nil {
		return p.Types[t]
	}
	return t != eventRequestRejected
}

// Page is one page of a SKU's feed.
type Page struct {
	// Events are the events of the page, in log order.
	Events []*Encoded
	// NextCursor is the id of the page's last record (sent or not: a type
	// the consumer did not ask for moves it too), "" when the page read
	// no record.
	NextCursor string
	// FirstIndex and DurableIndex are the log's first and last durable
	// record as the page was read.
	FirstIndex, DurableIndex uint64
}

// Reader reads one SKU's feed from a cursor on. It is not safe for
// concurrent use.
type Reader struct {
	f                 *Feed
	campaignID, skuID string
	log               Log
	def               sku.Definition
	chain             Chain
	from              uint64 // the first index to send
	fromStart         bool   // no cursor: from follows the start of the retained log
	p                 Params
}

// Open opens the feed of one SKU after cursor (an event id of the SKU;
// "" for the start of its retained log). Errors: ErrUnknownSKU,
// ErrNotOpen, *BadCursorError, *DivergedError.
func (f *Feed) Open(campaignID, skuID, cursor string, p Params) (*Reader, error) {
	def, log, chain, err := f.sku(campaignID, skuID)
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f, campaignID: campaignID, skuID: skuID, log: log, def: def, chain: chain,
		from: max(log.FirstIndex(), 1), fromStart: true, p: p.filled()}
	if cursor == "" {
		return r, nil
	}
	if err := r.seek(cursor); err != nil {
		return nil, err
	}
	return r, nil
}

// sku returns what reading one SKU's feed starts from: its definition, its
// open log and that log's history chain. Errors: ErrUnknownSKU, ErrNotOpen,
// and a chain that could not be read.
func (f *Feed) sku(campaignID, skuID string) (sku.Definition, Log, Chain, error) {
	def, known := f.src.Definition(campaignID, skuID)
	if !known {
		return sku.Definition{}, nil, Chain{}, ErrUnknownSKU
	}
	log, dir, ok := f.src.FeedLog(campaignID, skuID)
	if !ok {
		return sku.Definition{}, nil, Chain{}, ErrNotOpen
	}
	chain, err := f.chains.load(dir, log, def.IDKey)
	if err != nil {
		return sku.Definition{}, nil, Chain{}, fmt.Errorf("reading the history chain of %s: %w", dir, err)
	}
	return def, log, chain, nil
}

// seek moves an opened reader past cursor (an event id of its SKU).
func (r *Reader) seek(cursor string) error {
	h, index, err := parseCursor(cursor)
	if positions, cerr := ParseCampaignCursor(cursor); err != nil && cerr == nil && len(positions) > 0 {
		return &BadCursorError{Detail: fmt.Sprintf("malformed cursor %q: a campaign cursor (of /admin/campaigns/{c}/events); "+
			"a SKU's feed resumes after an event id, <16 hex digits>-<index>", cursor)}
	}
	if err != nil {
		return &BadCursorError{Detail: err.Error()}
	}
	forkIndex, err := r.chain.Check(h, index)
	switch {
	case errors.Is(err, ErrUnknownHistory):
		return &BadCursorError{Detail: "the cursor is not one of this SKU's"}
	case errors.Is(err, ErrDiverged):
		return &DivergedError{SKUID: r.skuID, ForkIndex: forkIndex, History: r.chain.At(forkIndex + 1)}
	}
	if durable := r.log.DurableIndex(); index > durable {
		return &DivergedError{SKUID: r.skuID, ForkIndex: durable, BeyondDurable: true}
	}
	r.from, r.fromStart = index+1, false
	return nil
}

// Cursor is where the consumer stands: the id of the last record read ("",
// before the first record of a log).
func (r *Reader) Cursor() string {
	if r.from <= 1 {
		return ""
	}
	return eventID(r.chain.At(r.from-1), r.from-1)
}

// Wait reads the next page, waiting until deadline for a durable record
// after the cursor, or until ctx is done (the page then holds what there
// is). A page without a record has the reader's cursor as NextCursor.
// Errors: *CompactedError, ErrLogClosed, *LookupError, and the server's.
func (r *Reader) Wait(ctx context.Context, deadline time.Time) (*Page, error) {
	for {
		page, err := r.read()
		if err != nil || page.NextCursor != "" {
			return page, err
		}
		wait := time.Until(deadline)
		if wait <= 0 || ctx.Err() != nil { // shutting down: answer what there is
			page.NextCursor = r.Cursor()
			return page, nil
		}
		r.f.waitDurable(ctx, r.log.DurableAfter(r.from-1), wait)
	}
}

// waitDurable waits for durable (a log's DurableAfter channel, closed by
// its flusher once per group commit and shared by every reader of the
// SKU), for wait, or for ctx. An idle reader costs one timer and nothing
// else until one of them fires.
func (f *Feed) waitDurable(ctx context.Context, durable <-chan struct{}, wait time.Duration) {
	f.waiting.Add(1)
	defer f.waiting.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-durable:
		f.woke(WokeByRecord)
	case <-timer.C:
		f.woke(WokeByDeadline)
	case <-ctx.Done():
		f.woke(WokeByShutdown)
	}
}

// read reads up to the limit of durable records from r.from and maps them
// to events; NextCursor is "" when there was no record. It advances
// r.from. The SKU's event cache answers when it holds the records (a
// consumer at the tail behind another); else one reader at a time reads
// the log and fills the cache (readLog), and the others then find it
// filled.
func (r *Reader) read() (*Page, error) {
	if r.from > r.log.DurableIndex() && r.log.Err() == nil {
		// Nothing new (a waiting reader's wake-up, a heartbeat): no cache,
		// no lock but the log's (a failed or closed log takes readLog's
		// answer).
		return &Page{FirstIndex: r.log.FirstIndex(), DurableIndex: r.log.DurableIndex()}, nil
	}
	cache := r.f.caches.of(r.campaignID, r.skuID, r.chain.At(math.MaxUint64))
	if page, ok := r.pageFromCache(cache); ok {
		return page, nil
	}
	cache.fill.Lock()
	defer cache.fill.Unlock()
	if page, ok := r.pageFromCache(cache); ok {
		return page, nil
	}
	return r.readLog(cache)
}

// pageFromCache serves the next page from the cache alone, when it holds
// every record of it. It answers only for records at or after the log's
// first index (a compacted cursor gets its error from readLog) and through
// the durable index read before it.
func (r *Reader) pageFromCache(cache *eventCache) (*Page, bool) {
	durable := r.log.DurableIndex()
	if r.from > durable || r.from < r.log.FirstIndex() {
		return nil, false
	}
	to := min(durable, r.from+uint64(r.p.Limit)-1)
	events, ok := cache.appendRange(make([]*Encoded, 0, min(to-r.from+1, 64)), r.from, to, r.p.wanted)
	if !ok {
		return nil, false
	}
	page := &Page{Events: events, FirstIndex: r.log.FirstIndex(), DurableIndex: durable}
	r.from, r.fromStart = to+1, false
	page.NextCursor = r.Cursor()
	return page, true
}

// readLog reads the next page from the log, maps and encodes the records
// the cache lacks as it reads them, and caches them (the records of types
// this reader does not want unencoded: their place only). The events of
// records that need their reservation's view (needsReservation) are
// encoded after the read, with the page's views looked up in one batch.
func (r *Reader) readLog(cache *eventCache) (*Page, error) {
	type pending struct {
		at    int // in page.Events
		index uint64
		rec   sku.Record
	}
	var (
		waiting []pending
		ids     *sku.ReservationIDs // made for the first record to encode
		events  = make([]*Encoded, 0, min(r.p.Limit, 64))
		scratch []byte // an event is encoded here, then copied at its size
	)
	encode := func(rec sku.Record, index uint64, view sku.View) (*Encoded, error) {
		if ids == nil {
			ids = sku.NewReservationIDs(r.def)
		}
		ce := NewEvent(rec, index, eventID(r.chain.At(index), index), r.def, ids, view)
		var err error
		if scratch, err = ce.appendJSON(scratch[:0]); err != nil {
			return nil, fmt.Errorf("encoding the event of record %d of %s/%s: %w", index, r.campaignID, r.skuID, err)
		}
		e := &Encoded{index: index, id: ce.ID, typ: ce.Type, json: bytes.Clone(scratch)}
		cache.put(e)
		return e, nil
	}
	next, err := r.log.ReadDurable(r.from, r.p.Limit, func(index uint64, typ byte, payload []byte) error {
		t := sku.RecordType(typ)
		et := EventType(t)
		if !r.p.wanted(et) { // advances the cursor only
			if _, ok := cache.get(index); !ok {
				cache.put(&Encoded{index: index, id: eventID(r.chain.At(index), index), typ: et})
			}
			return nil
		}
		if e, ok := cache.get(index); ok && e.json != nil {
			events = append(events, e)
			return nil
		}
		rec, err := sku.DecodeRecord(t, payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		if needsReservation(t) {
			waiting = append(waiting, pending{at: len(events), index: index, rec: rec})
			events = append(events, nil)
			return nil
		}
		e, err := encode(rec, index, sku.View{})
		events = append(events, e)
		return err
	})
	page := &Page{FirstIndex: r.log.FirstIndex(), DurableIndex: r.log.DurableIndex()}
	switch {
	case errors.Is(err, wal.ErrCompacted):
		var compacted *wal.CompactedError
		if errors.As(err, &compacted) {
			page.FirstIndex = max(page.FirstIndex, compacted.First)
			if r.fromStart && compacted.First > r.from {
				// A truncation overtook a consumer without a cursor: it
				// starts at the retained log, wherever that is now.
				r.from = compacted.First
				return r.readLog(cache)
			}
		}
		return nil, &CompactedError{CampaignID: r.campaignID, SKUID: r.skuID, FirstIndex: page.FirstIndex}
	case errors.Is(err, wal.ErrClosed), errors.Is(err, wal.ErrFailed):
		return nil, ErrLogClosed
	case err != nil:
		return nil, fmt.Errorf("reading the log of %s/%s: %w", r.campaignID, r.skuID, err)
	}
	if next == r.from {
		return page, nil // no record
	}
	if len(waiting) > 0 {
		views, err := r.reservationsOf(func(yield func(sku.Record)) {
			for _, p := range waiting {
				yield(p.rec)
			}
		})
		if err != nil {
			return nil, err
		}
		for _, p := range waiting {
			e, err := encode(p.rec, p.index, views[p.rec.Seq])
			if err != nil {
				return nil, err
			}
			events[p.at] = e
		}
	}
	page.Events = events
	r.from, r.fromStart = next, false
	page.NextCursor = r.Cursor()
	return page, nil
}

// reservationsOf looks up the reservations the records' events need, in
// one batch for the page, within the reader's LookupTimeout (a shutdown
// does not cut it short: the page in hand is answered).
func (r *Reader) reservationsOf(records func(yield func(sku.Record))) (map[uint32]sku.View, error) {
	var seqs []uint32
	seen := map[uint32]bool{}
	records(func(rec sku.Record) {
		if needsReservation(rec.Type) && !seen[rec.Seq] {
			seen[rec.Seq] = true
			seqs = append(seqs, rec.Seq)
		}
	})
	views := make(map[uint32]sku.View, len(seqs))
	if len(seqs) == 0 {
		return views, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.p.LookupTimeout)
	defer cancel()
	found, err := r.f.src.Reservations(ctx, r.campaignID, r.skuID, seqs)
	if err != nil {
		return nil, &LookupError{Err: err}
	}
	for i, seq := range seqs {
		views[seq] = found[i]
	}
	return views, nil
}
