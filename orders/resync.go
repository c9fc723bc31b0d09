package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
)

// A SKU's log is truncated after its snapshots, so the feed may no longer
// hold the events a consumer needs: its cursor was passed (410
// CURSOR_COMPACTED), or it meets a SKU for the first time after the SKU's
// first records were removed. The consumer then resynchronises that SKU as
// etcd's get-then-watch does: it takes the SKU's reservations from the
// export, as of one log index, into its orders, and reads the feed after
// that index. It then holds what a consumer that never fell behind holds.

// Compacted says which SKU's events are gone from the feed before the
// consumer read them.
type Compacted struct {
	SKUID string
	// Why, for the log.
	Reason string
}

func (c *Compacted) Error() string {
	return "orders: the feed of SKU " + c.SKUID + " no longer holds events this consumer needs (" + c.Reason + ")"
}

// compactedStart checks a page read after cursor: a SKU the cursor has no
// position for must start at its first record (index 1, its definition);
// a later first event means the records before it are gone.
func compactedStart(events []client.Event, cursor string) error {
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return fmt.Errorf("%w: cursor %q: %v", ErrPosition, cursor, err)
	}
	for _, e := range events {
		history, _, _ := strings.Cut(e.ID, "-")
		if _, known := positions[history]; known {
			continue
		}
		if e.SeckillIndex != 1 {
			_, skuID, _ := SourceSKU(e.Source)
			return &Compacted{SKUID: skuID, Reason: fmt.Sprintf("its first event here is record %d", e.SeckillIndex)}
		}
		positions[history] = e.ID
	}
	return nil
}

// Resync replaces what consumer holds of SKU skuID with seckill's export
// of it, and moves consumer's campaign cursor to the export's index, in
// one transaction; it returns the new cursor.
func (f *FeedSource) Resync(ctx context.Context, store *Store, consumer, cursor, skuID string) (string, error) {
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return cursor, fmt.Errorf("%w: cursor %q: %v", ErrPosition, cursor, err)
	}
	x, err := f.export(ctx, skuID)
	if err != nil {
		return cursor, err
	}
	history, _, _ := strings.Cut(x.end.NextCursor, "-")
	positions[history] = x.end.NextCursor
	next := feed.CampaignCursor(positions)
	err = pgx.BeginFunc(ctx, store.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		x.queue(batch, consumer, next)
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return cursor, fmt.Errorf("resync %s: %w", skuID, err)
	}
	return next, nil
}

// exported is a SKU as seckill's export has it: its reservations and its
// payments to refund, as of one log index (end).
type exported struct {
	campaignID, skuID string
	rows              []client.ExportRow
	refunds           []client.Refund
	end               client.ExportEnd
}

// export reads SKU skuID's export and refunds.
func (f *FeedSource) export(ctx context.Context, skuID string) (*exported, error) {
	x := &exported{campaignID: f.CampaignID, skuID: skuID}
	var err error
	x.end, err = f.Client.Export(ctx, f.CampaignID, skuID, func(r client.ExportRow) error {
		x.rows = append(x.rows, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resync %s: export: %w", skuID, err)
	}
	if x.refunds, err = f.Client.Refunds(ctx, f.CampaignID, skuID); err != nil {
		return nil, fmt.Errorf("resync %s: refunds: %w", skuID, err)
	}
	if _, _, ok := strings.Cut(x.end.NextCursor, "-"); !ok {
		return nil, fmt.Errorf("resync %s: the export ends with no position (%q)", skuID, x.end.NextCursor)
	}
	return x, nil
}

// queue queues the statements that set the SKU's orders and refunds to
// the export's, and consumer's cursor to next. Every field of an order the
// events set is set, the amount and token_released included, on a new row
// and on one the consumer held before: the row is then the one the events
// up to the export's index build, whichever way it came (a held row's
// amount of a payment a restore abandoned is cleared too).
func (x *exported) queue(batch *pgx.Batch, consumer, next string) {
	for _, r := range x.rows {
		batch.Queue(insertOrder+`state, paid_at, payment_id, amount, closed_at, close_reason, token_released)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, nullif($12, ''), $13, $14, nullif($15, ''), $16)
ON CONFLICT (reservation_id) DO UPDATE SET state = $10, paid_at = $11, payment_id = nullif($12, ''), amount = $13, closed_at = $14,
    close_reason = nullif($15, ''), token_released = $16, `+setOrder,
			r.ReservationID, x.campaignID, x.skuID, r.RequestID, r.UserID, int64(r.TokenID), r.CreatedAt, r.ExpireAt, x.end.NextCursor,
			orderState(r.Reservation), nullTime(r.PaidAt), r.PaymentID, r.Amount, nullTime(r.ClosedAt), r.ClosedReason, r.TokenReleased)
	}
	for _, r := range x.refunds {
		batch.Queue(`INSERT INTO order_refunds (reservation_id, payment_id, amount, required_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (reservation_id, payment_id) DO NOTHING`, r.ReservationID, r.PaymentID, r.Amount, r.At)
	}
	batch.Queue(`INSERT INTO order_cursors (consumer, cursor) VALUES ($1, $2)
ON CONFLICT (consumer) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = now()`, consumer, next)
}

// nullTime is nil for the zero time (NULL in PostgreSQL).
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// asCompacted reads a feed answer as a Compacted SKU: the feed's 410
// names the SKU whose cursor position was passed.
func asCompacted(err error) (*Compacted, bool) {
	var c *Compacted
	if errors.As(err, &c) {
		return c, true
	}
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrCursorCompacted) && e.SKUID != "" {
		return &Compacted{SKUID: e.SKUID, Reason: fmt.Sprintf("410 CURSOR_COMPACTED: the log starts at record %d", e.FirstIndex)}, true
	}
	return nil, false
}
