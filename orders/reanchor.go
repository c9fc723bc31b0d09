package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/relay"
)

// A restore of a SKU to an earlier point (seckillctl restore --until-*)
// abandons the records after its fork index: the restored seckilld
// re-uses their log indexes and reservation ids for other sales, and the
// feed answers a cursor past the fork 409 CURSOR_DIVERGED (so does a
// seckilld started on a copy older than the cursor, which keeps its
// history). What this service applied from those records is no longer
// seckill's: orders of reservations the restored copy never made,
// payments and closes it never recorded. That is for an operator to
// settle, not for the service to decide: Run stops on it (a *Diverged, an
// ErrPosition), and the operator runs Reanchor (seckill-orders reanchor),
// which keeps every order the abandoned records touched apart, reports
// each, and follows the restored feed from its export.

// Reasons an order is in diverged_orders.
const (
	// DivergedNotInSeckill: the restored seckill has no such reservation;
	// the order left orders (its id may come back for another sale).
	DivergedNotInSeckill = "NOT_IN_SECKILL"
	// DivergedOtherSale: the restored seckill has the id for another sale
	// (another request, user or creation); the order left orders for it.
	DivergedOtherSale = "OTHER_SALE"
	// DivergedRewound: the same reservation, whose events after the fork
	// were abandoned; the order stays, set to the restored state.
	DivergedRewound = "REWOUND"
)

// Diverged is the feed's 409 CURSOR_DIVERGED for a SKU (or Check's: the
// last event applied is not the feed's), or a relay's
// relay.TypeReanchored message in its stream: Run stops on it (errors.Is
// ErrPosition), and its message names the way forward.
type Diverged struct {
	CampaignID, SKUID, Cell string
	// ForkIndex is the last record the restored log shares with what the
	// consumer read; History the log's history after it ("" for a copy
	// older than the cursor, which kept its history).
	ForkIndex uint64
	History   string
	// Stream and Seq, for a consumer of a relay's stream, are the stream
	// and the sequence of the relay's relay.TypeReanchored message that
	// says so ("" and 0 for the feed's 409).
	Stream string
	Seq    uint64
}

func (d *Diverged) Error() string {
	if d.Stream != "" {
		return fmt.Sprintf("orders: SKU %s of campaign %s was restored to an earlier point: message %d of stream %s (%s) says its messages of the SKU "+
			"before it past log index %d are of records no longer seckill's, which this service applied (the messages after it re-use their indexes and "+
			"reservation ids for other sales); the service stops here: run seckill-orders reanchor --campaign %s --nats URL --stream %s with this "+
			"service's --database, --admin-token, and the restored seckilld's address as --feed: it keeps the orders those records touched apart "+
			"(diverged_orders), reports each, and goes on after that message from the SKU's export",
			d.SKUID, d.CampaignID, d.Seq, d.Stream, relay.TypeReanchored, d.ForkIndex, d.CampaignID, d.Stream)
	}
	cell := ""
	if d.Cell != "" {
		cell = " --cell " + d.Cell + " (with that cell's address as --feed)"
	}
	return fmt.Sprintf("orders: SKU %s of campaign %s was restored to an earlier point: the records after its log index %d that this service "+
		"applied are no longer seckill's (the restored seckilld re-uses their indexes and reservation ids for other sales); "+
		"the service stops here: run seckill-orders reanchor --campaign %s%s with this service's --database, --feed and --admin-token: it keeps the orders "+
		"those records touched apart (diverged_orders), reports each, and follows the restored feed from its export", d.SKUID, d.CampaignID, d.ForkIndex, d.CampaignID, cell)
}

// Is makes a Diverged an ErrPosition: Run stops on it.
func (d *Diverged) Is(target error) bool { return target == ErrPosition }

// asDiverged reads the feed's 409 as a *Diverged.
func (f *FeedSource) asDiverged(err error) (*Diverged, bool) {
	var e *client.Error
	if !errors.As(err, &e) || !errors.Is(err, client.ErrCursorDiverged) || e.SKUID == "" {
		return nil, false
	}
	return &Diverged{CampaignID: f.CampaignID, SKUID: e.SKUID, Cell: f.Cell, ForkIndex: e.ForkIndex, History: e.History}, true
}

// Reanchored is what Reanchor did for one SKU.
type Reanchored struct {
	SKUID string
	// ForkIndex and History are the feed's 409's (Diverged).
	ForkIndex uint64
	History   string
	// ID is its row in order_reanchors.
	ID int64
	// AsOfIndex is the log index of the export the SKU was taken from,
	// and Cursor the consumer's cursor saved with it.
	AsOfIndex uint64
	Cursor    string
	// Events is how many abandoned events left order_events for
	// diverged_events.
	Events int
	// Orders are the orders the abandoned records touched, each kept in
	// diverged_orders as it was.
	Orders []DivergedOrder
	// Refunds are the refund rows the restored seckill does not list,
	// moved to diverged_refunds.
	Refunds []DivergedRefund
}

// DivergedOrder is an order an abandoned record touched: what it was, and
// what the restored seckill has under its id.
type DivergedOrder struct {
	ReservationID, Reason string
	// State, PaymentID and Amount are the order's before (Amount 0: none).
	State, PaymentID string
	Amount           int64
	// Seckill is the reservation's state in the restored seckill, "" for
	// none (NOT_IN_SECKILL).
	Seckill string
}

// DivergedRefund is a refund row the restored seckill does not list.
type DivergedRefund struct {
	ReservationID, PaymentID string
	Amount                   int64
	Refunded                 bool // the payment team had refunded it
}

// reanchorRounds bounds Reanchor's rounds: one per diverged SKU, of at
// most feed.CampaignFeedMaxSKUs.
const reanchorRounds = feed.CampaignFeedMaxSKUs + 1

// Reanchor re-anchors consumer on the restored feed: while the feed
// answers its saved cursor 409 CURSOR_DIVERGED for a SKU, or does not hold
// the last event applied of one of its positions (Check), it takes that
// SKU as a restore left it, in one transaction per SKU (reanchorSKU), and
// returns what it did, SKU by SKU (none: nothing diverged). Run the
// service again afterwards. It refuses to work beside a running consumer
// whose cursor moves (the transaction checks the cursor it started from).
func (f *FeedSource) Reanchor(ctx context.Context, store *Store, consumer string) ([]Reanchored, error) {
	var done []Reanchored
	for range reanchorRounds {
		cursor, err := store.Cursor(ctx, consumer)
		if err != nil {
			return done, err
		}
		_, err = f.Client.Feed(ctx, client.FeedRequest{CampaignID: f.CampaignID, After: cursor, Limit: 1})
		d, diverged := f.asDiverged(err)
		if !diverged {
			if err != nil && !errors.Is(err, client.ErrCursorCompacted) { // a 410 is the service's to resynchronise
				return done, fmt.Errorf("reading the feed after the saved cursor: %w", err)
			}
			// An older copy that recorded past the cursor takes it: the
			// events applied tell.
			if err := f.Check(ctx, store, cursor); !errors.As(err, &d) {
				return done, err
			}
		}
		r, err := f.reanchorSKU(ctx, store, consumer, cursor, d)
		if err != nil {
			return done, fmt.Errorf("re-anchoring SKU %s: %w", d.SKUID, err)
		}
		done = append(done, r)
	}
	return done, fmt.Errorf("orders: the feed still refuses the cursor after %d SKUs were re-anchored", reanchorRounds)
}

// reanchorSKU re-anchors SKU d.SKUID, in one transaction: every order of
// the SKU that an abandoned record touched (one of its events past the
// fork index, or its last_event_id past it) is copied to diverged_orders;
// those the restored seckill does not have, or has for another sale,
// leave orders, and the others are set to the restored state; the refund
// rows of those orders that the restored seckill does not list move to
// diverged_refunds, the abandoned events to diverged_events; then the SKU
// is taken from the restored seckilld's export (as a 410 does: Resync),
// and the cursor's positions of the SKU give way to the export's.
func (f *FeedSource) reanchorSKU(ctx context.Context, store *Store, consumer, cursor string, d *Diverged) (Reanchored, error) {
	r := Reanchored{SKUID: d.SKUID, ForkIndex: d.ForkIndex, History: d.History}
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return r, fmt.Errorf("%w: cursor %q: %v", ErrPosition, cursor, err)
	}
	// The cursor holds no SKU ids: the SKU's own feed tells its positions
	// (any answer but 400 BAD_CURSOR, "not one of this SKU's").
	for h, id := range positions {
		_, err := f.Client.Feed(ctx, client.FeedRequest{CampaignID: f.CampaignID, SKUID: d.SKUID, After: id, Limit: 1})
		var e *client.Error
		switch {
		case errors.As(err, &e) && e.Code == "BAD_CURSOR":
		case err == nil, errors.As(err, &e) && e.Status < 500 && e.Status != 429:
			delete(positions, h)
		default:
			return r, fmt.Errorf("reading SKU %s's feed after %s: %w", d.SKUID, id, err)
		}
	}
	x, err := f.export(ctx, d.SKUID)
	if err != nil {
		return r, err
	}
	history, _, _ := strings.Cut(x.end.NextCursor, "-")
	positions[history] = x.end.NextCursor
	r.AsOfIndex, r.Cursor = x.end.AsOfIndex, feed.CampaignCursor(positions)
	return r, settle(ctx, store, consumer, cursor, d, x, &r)
}

// settle is a re-anchoring's transaction (reanchorSKU): it checks that
// consumer's cursor is still cursor, records the re-anchoring, sets apart
// what the SKU's records after d.ForkIndex touched, takes the SKU from the
// export x and saves r.Cursor, filling r in.
func settle(ctx context.Context, store *Store, consumer, cursor string, d *Diverged, x *exported, r *Reanchored) error {
	source := "/seckill/" + d.CampaignID + "/" + d.SKUID
	return pgx.BeginFunc(ctx, store.pool, func(tx pgx.Tx) error {
		var saved string
		if err := tx.QueryRow(ctx, `SELECT cursor FROM order_cursors WHERE consumer = $1 FOR UPDATE`, consumer).Scan(&saved); err != nil || saved != cursor {
			return fmt.Errorf("the cursor of %s moved while it was re-anchored (%q, then %q: %v): stop the service first", consumer, cursor, saved, err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO order_reanchors (consumer, campaign_id, sku_id, fork_index, history, as_of_index, cursor)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, consumer, d.CampaignID, d.SKUID, int64(d.ForkIndex), d.History, int64(x.end.AsOfIndex), r.Cursor).Scan(&r.ID); err != nil {
			return err
		}
		touched, err := abandoned(ctx, tx, source, d.CampaignID, d.SKUID, d.ForkIndex, &r.Events)
		if err != nil {
			return err
		}
		if r.Orders, err = divergedOrders(ctx, tx, touched, x); err != nil {
			return err
		}
		if r.Refunds, err = divergedRefunds(ctx, tx, touched, x); err != nil {
			return err
		}
		batch := &pgx.Batch{}
		byReason := map[string][]string{}
		var leave, ids, payments []string
		for _, o := range r.Orders {
			byReason[o.Reason] = append(byReason[o.Reason], o.ReservationID)
			if o.Reason != DivergedRewound {
				leave = append(leave, o.ReservationID)
			}
		}
		for reason, ids := range byReason {
			batch.Queue(`INSERT INTO diverged_orders SELECT $1, $2, o.* FROM orders o WHERE reservation_id = ANY($3)`, r.ID, reason, ids)
		}
		batch.Queue(`DELETE FROM orders WHERE reservation_id = ANY($1)`, leave)
		// A rewound order keeps the columns the export does not carry only
		// where the restored reservation has them too.
		rows := exportRows(x)
		for _, id := range byReason[DivergedRewound] {
			now := rows[id]
			batch.Queue(`UPDATE orders SET amount = CASE WHEN payment_id IS NOT DISTINCT FROM nullif($2, '') THEN amount END,
    token_released = token_released AND $3 WHERE reservation_id = $1`, id, now.PaymentID, now.State == StateClosed)
		}
		for _, rf := range r.Refunds {
			ids, payments = append(ids, rf.ReservationID), append(payments, rf.PaymentID)
		}
		batch.Queue(`INSERT INTO diverged_refunds SELECT $1, r.* FROM order_refunds r
WHERE (reservation_id, payment_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, r.ID, ids, payments)
		batch.Queue(`DELETE FROM order_refunds WHERE (reservation_id, payment_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, ids, payments)
		batch.Queue(`INSERT INTO diverged_events SELECT $1, e.* FROM order_events e WHERE source = $2 AND seckill_index > $3`, r.ID, source, int64(d.ForkIndex))
		batch.Queue(`DELETE FROM order_events WHERE source = $1 AND seckill_index > $2`, source, int64(d.ForkIndex))
		x.queue(batch, consumer, r.Cursor)
		return tx.SendBatch(ctx, batch).Close()
	})
}

// abandoned returns the reservations the abandoned records of a SKU
// touched: the subjects of its events past forkIndex (counted in events),
// and its orders whose last event is past it (a resynchronisation's
// export sets that too).
func abandoned(ctx context.Context, tx pgx.Tx, source, campaignID, skuID string, forkIndex uint64, events *int) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT true, coalesce(subject, '') FROM order_events WHERE source = $1 AND seckill_index > $2
UNION ALL SELECT false, reservation_id FROM orders WHERE campaign_id = $3 AND sku_id = $4
    AND split_part(last_event_id, '-', 2) ~ '^[0-9]+$' AND split_part(last_event_id, '-', 2)::numeric > $2`,
		source, int64(forkIndex), campaignID, skuID)
	if err != nil {
		return nil, err
	}
	defer rows.Close() // a Scan's error returns before the rows are read out
	seen := map[string]bool{}
	var touched []string
	for rows.Next() {
		var event bool
		var id string
		if err := rows.Scan(&event, &id); err != nil {
			return nil, err
		}
		if event {
			*events++
		}
		if id != "" && !seen[id] {
			seen[id] = true
			touched = append(touched, id)
		}
	}
	return touched, rows.Err()
}

// exportRows indexes the export's reservations by id.
func exportRows(x *exported) map[string]client.ExportRow {
	rows := make(map[string]client.ExportRow, len(x.rows))
	for _, r := range x.rows {
		rows[r.ReservationID] = r
	}
	return rows
}

// divergedOrders reads the touched orders and says what each became.
func divergedOrders(ctx context.Context, tx pgx.Tx, touched []string, x *exported) ([]DivergedOrder, error) {
	rows, err := tx.Query(ctx, `SELECT reservation_id, request_id, user_id, created_at, state, coalesce(payment_id, ''), coalesce(amount, 0)
FROM orders WHERE reservation_id = ANY($1) ORDER BY reservation_id`, touched)
	if err != nil {
		return nil, err
	}
	defer rows.Close() // a Scan's error returns before the rows are read out
	now := exportRows(x)
	var out []DivergedOrder
	for rows.Next() {
		var o DivergedOrder
		var request, user string
		var created time.Time
		if err := rows.Scan(&o.ReservationID, &request, &user, &created, &o.State, &o.PaymentID, &o.Amount); err != nil {
			return nil, err
		}
		r, ok := now[o.ReservationID]
		switch {
		case !ok:
			o.Reason = DivergedNotInSeckill
		case r.RequestID != request || r.UserID != user || !r.CreatedAt.Equal(created):
			o.Reason, o.Seckill = DivergedOtherSale, orderState(r.Reservation)
		default:
			o.Reason, o.Seckill = DivergedRewound, orderState(r.Reservation)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// orderState is the state an order of r has.
func orderState(r client.Reservation) string {
	if r.State == StateClosed && r.RefundRequired {
		return StateRefundRequired
	}
	return r.State
}

// divergedRefunds reads the refund rows of the touched orders that the
// restored seckill does not list.
func divergedRefunds(ctx context.Context, tx pgx.Tx, touched []string, x *exported) ([]DivergedRefund, error) {
	listed := map[[2]string]bool{}
	for _, r := range x.refunds {
		listed[[2]string{r.ReservationID, r.PaymentID}] = true
	}
	rows, err := tx.Query(ctx, `SELECT reservation_id, payment_id, amount, refunded_at IS NOT NULL FROM order_refunds
WHERE reservation_id = ANY($1) ORDER BY reservation_id, payment_id`, touched)
	if err != nil {
		return nil, err
	}
	defer rows.Close() // a Scan's error returns before the rows are read out
	var out []DivergedRefund
	for rows.Next() {
		var r DivergedRefund
		if err := rows.Scan(&r.ReservationID, &r.PaymentID, &r.Amount, &r.Refunded); err != nil {
			return nil, err
		}
		if !listed[[2]string{r.ReservationID, r.PaymentID}] {
			out = append(out, r)
		}
	}
	return out, rows.Err()
}

// String is the report's line of an order: its id, what became of it, and
// what it was.
func (o DivergedOrder) String() string {
	s := fmt.Sprintf("%s %s: was %s", o.Reason, o.ReservationID, o.State)
	if o.PaymentID != "" {
		s += " payment " + o.PaymentID + " amount " + strconv.FormatInt(o.Amount, 10)
	}
	switch o.Reason {
	case DivergedNotInSeckill:
		s += "; seckill has no such reservation"
	case DivergedOtherSale:
		s += "; seckill has the id for another sale, " + o.Seckill
	default:
		s += "; seckill now " + o.Seckill
	}
	return s
}
