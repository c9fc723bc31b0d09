package actors

import (
	"context"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// feedLookupsInFlight bounds the reservation look-ups Reservations keeps in
// a SKU's inbox at once, so that a feed reader never takes more than a few
// places that buyers' calls need (DefaultInboxMax).
const feedLookupsInFlight = 8

// FeedLog returns the open log of a SKU and the SKU's folder, for readers
// beside the engine (the event feed reads durable records with
// wal.Log.ReadDurable and waits with DurableAfter, sending the actor no
// message). ok is false for an unknown SKU, or while it has no open log
// (recovering, or failed): the caller retries later. The log is replaced
// when the SKU recovers; a reader that gets wal.ErrClosed asks again.
func (e *Engine) FeedLog(campaignID, skuID string) (log *wal.Log, dir string, ok bool) {
	h := e.SKU(campaignID, skuID)
	if h == nil || !h.defined() {
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
