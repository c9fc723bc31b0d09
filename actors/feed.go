package actors

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// feedLookupsInFlight bounds the reservation look-ups Reservations keeps in
// a SKU's inbox at once, so that a feed reader never takes more than a few
// places that buyers' calls need (DefaultInboxMax).
const feedLookupsInFlight = 8

// The engine is the event feed's source (package feed): the feed reads the
// SKUs' logs beside the actors and asks them only for reservation views.
var _ feed.Source = (*Engine)(nil)

// Definition returns the durable definition of a SKU; ok is false for a
// SKU the engine does not know (or whose definition is not durable yet).
func (e *Engine) Definition(campaignID, skuID string) (def sku.Definition, ok bool) {
	st, ok := e.SKUStats(campaignID, skuID)
	return *st.Definition, ok
}

// CampaignSKUs returns the ids of the campaign's defined SKUs, sorted.
func (e *Engine) CampaignSKUs(campaignID string) []string {
	var ids []string
	for _, h := range e.SKUs() {
		if h.campaignID == campaignID && h.defined() {
			ids = append(ids, h.skuID)
		}
	}
	return ids
}

// FeedLog returns the open log of a SKU and the SKU's folder, for readers
// beside the engine (the event feed reads durable records with
// wal.Log.ReadDurable and waits with DurableAfter, sending the actor no
// message). ok is false for an unknown SKU, or while it has no open log
// (recovering, or failed): the caller retries later. The log is replaced
// when the SKU recovers; a reader that gets wal.ErrClosed asks again.
func (e *Engine) FeedLog(campaignID, skuID string) (log feed.Log, dir string, ok bool) {
	l, d, ok := e.openLog(campaignID, skuID)
	if !ok {
		return nil, "", false // no typed nil in the interface
	}
	return l, d.String(), true
}

// openLog is FeedLog with the log's own type.
func (e *Engine) openLog(campaignID, skuID string) (log *wal.Log, dir skudir.Dir, ok bool) {
	h := e.SKU(campaignID, skuID)
	if h == nil {
		return nil, "", false
	}
	log = h.log.Load()
	return log, h.dir, log != nil
}

// Reservations returns the durable state of the reservations with the
// given sequence numbers of one SKU, in the order asked (a zero View where
// none exists). The look-ups go to the actor as ordinary get calls, at most
// feedLookupsInFlight at a time, each a table read. Errors: those of Get
// (ErrUnknownSKU, ErrUnavailable, ErrBusy, ctx.Err()).
func (e *Engine) Reservations(ctx context.Context, campaignID, skuID string, seqs []uint32) ([]sku.View, error) {
	views := make([]sku.View, len(seqs))
	for start := 0; start < len(seqs); start += feedLookupsInFlight {
		end := min(start+feedLookupsInFlight, len(seqs))
		calls := make([]*call, 0, end-start)
		h := e.SKU(campaignID, skuID)
		if h == nil {
			return nil, ErrUnknownSKU
		}
		for _, seq := range seqs[start:end] {
			c := newCall(core.KindGet)
			c.Seq = seq
			h.post(c)
			calls = append(calls, c)
		}
		var firstErr error
		for i, c := range calls {
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err() // the calls left are abandoned, not pooled
			}
			if c.Err != nil && firstErr == nil {
				firstErr = c.Err
			}
			if c.Err == nil && c.Found {
				views[start+i] = c.Result.Reservation
			}
			c.free()
		}
		if firstErr != nil {
			return nil, firstErr
		}
	}
	return views, nil
}

// durableStateAttempts bounds how often DurableState starts again when a
// snapshot or a truncation of the running SKU overtook its read.
const durableStateAttempts = 4

// DurableState rebuilds a SKU's state as of a durable index, off the
// actor: the newest usable snapshot plus the durable records after it
// (recovery.Plan over wal.Log.ReadDurable), into a Machine of its own. It
// is the consistent export a feed consumer resynchronises from (etcd's
// get-then-watch): the state of every reservation through asOf, after
// which the consumer reads the feed from asOf on. It costs the SKU's
// actor nothing, and the caller a Machine as large as the SKU's (about
// its snapshot's size) while it is used. Errors: ErrUnknownSKU,
// ErrUnavailable (no open log), and the recovery's errors.
func (e *Engine) DurableState(campaignID, skuID string) (m *sku.Machine, asOf uint64, err error) {
	for attempt := 1; ; attempt++ {
		log, dir, ok := e.openLog(campaignID, skuID)
		if !ok {
			if e.SKU(campaignID, skuID) == nil {
				return nil, 0, ErrUnknownSKU
			}
			return nil, 0, ErrUnavailable
		}
		durable := durableLog{log: log, last: log.DurableIndex()}
		res, err := recovery.Plan(durable, snapshot.Dir(dir.Snapshots()),
			recovery.Options{CampaignID: campaignID, SKUID: skuID})
		if err == nil {
			return res.Machine, durable.last, nil
		}
		// A snapshot written after the durable index was read looks like a
		// short log; a truncation removes records being replayed; a pruned
		// snapshot disappears: read again.
		retry := errors.Is(err, recovery.ErrShortLog) || errors.Is(err, wal.ErrCompacted) ||
			errors.Is(err, os.ErrNotExist) || errors.Is(err, wal.ErrClosed)
		if !retry || attempt == durableStateAttempts {
			return nil, 0, err
		}
	}
}

// durableLog is a running log seen through ReadDurable up to last: the
// recovery.Log DurableState replays.
type durableLog struct {
	log  *wal.Log
	last uint64
}

func (d durableLog) FirstIndex() uint64 { return d.log.FirstIndex() }
func (d durableLog) LastIndex() uint64  { return d.last }

// durableLogPage is the records per ReadDurable call of a replay.
const durableLogPage = 4096

func (d durableLog) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	from = max(from, 1)
	for from <= d.last {
		next, err := d.log.ReadDurable(from, int(min(d.last-from+1, durableLogPage)), fn)
		if err != nil {
			return err
		}
		if next == from {
			return fmt.Errorf("%w: the log ends before its durable record %d", wal.ErrCorrupt, from)
		}
		from = next
	}
	return nil
}
