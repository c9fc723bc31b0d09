package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/client"
)

// Applied is what one batch did.
type Applied struct {
	// Fresh says, event by event, which were applied now (the others had
	// been before).
	Fresh []bool
	// Committed is when the transaction committed.
	Committed time.Time
}

// Store writes orders into PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a store over pool (Migrate first).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Cursor returns where consumer resumes ("" before its first batch).
func (s *Store) Cursor(ctx context.Context, consumer string) (string, error) {
	var cursor string
	err := s.pool.QueryRow(ctx, `SELECT cursor FROM order_cursors WHERE consumer = $1`, consumer).Scan(&cursor)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return cursor, err
}

// Apply applies events in order and saves cursor for consumer, all in one
// transaction: the events are recorded in order_events first (one
// statement, ON CONFLICT (source, id) DO NOTHING), and only those whose
// record is new are applied; the effects and the cursor then go to
// PostgreSQL as one pipeline, in order.
func (s *Store) Apply(ctx context.Context, consumer string, events []client.Event, cursor string) (Applied, error) {
	var done Applied
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fresh, err := record(ctx, tx, events)
		if err != nil {
			return err
		}
		// The new orders first, in one statement (a reservation's creation
		// comes before its other events, so this keeps each order's events
		// in log order), then the other events one by one, in order.
		batch := &pgx.Batch{}
		if err := queueCreates(batch, events, fresh); err != nil {
			return err
		}
		for i := range events {
			if fresh[i] && events[i].Type != client.TypeReservationCreated {
				if err := queueEffect(batch, &events[i]); err != nil {
					return err
				}
			}
		}
		batch.Queue(`INSERT INTO order_cursors (consumer, cursor) VALUES ($1, $2)
ON CONFLICT (consumer) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = now()`, consumer, cursor)
		done.Fresh = fresh
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return Applied{}, err
	}
	done.Committed = time.Now()
	return done, nil
}

// record inserts events into order_events and says which of them are new
// (an event twice in events is new once: its first time).
func record(ctx context.Context, tx pgx.Tx, events []client.Event) ([]bool, error) {
	n := len(events)
	sources, ids, types, subjects, data := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	indexes, times := make([]int64, n), make([]time.Time, n)
	for i, e := range events {
		sources[i], ids[i], types[i], subjects[i], data[i] = e.Source, e.ID, e.Type, e.Subject, string(e.Data)
		indexes[i], times[i] = int64(e.SeckillIndex), e.Time
	}
	rows, err := tx.Query(ctx, `INSERT INTO order_events (source, id, type, subject, seckill_index, event_time, data)
SELECT source, id, type, nullif(subject, ''), seckill_index, event_time, data::jsonb
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[])
    AS e(source, id, type, subject, seckill_index, event_time, data)
ON CONFLICT (source, id) DO NOTHING RETURNING source, id`, sources, ids, types, subjects, indexes, times, data)
	if err != nil {
		return nil, fmt.Errorf("recording %d events: %w", n, err)
	}
	inserted := map[[2]string]bool{}
	for rows.Next() {
		var key [2]string
		if err := rows.Scan(&key[0], &key[1]); err != nil {
			return nil, err
		}
		inserted[key] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recording %d events: %w", n, err)
	}
	fresh := make([]bool, n)
	for i, e := range events {
		key := [2]string{e.Source, e.ID}
		fresh[i] = inserted[key]
		delete(inserted, key)
	}
	return fresh, nil
}

// insertOrder is the first half of every order statement: the
// reservation's immutable fields, which every reservation event carries,
// so an order is made by whichever of its events comes first; and every
// event sets them again on conflict (they never change in seckill, so a
// re-delivered event repairs a row edited by hand).
const (
	insertOrder = `INSERT INTO orders (reservation_id, campaign_id, sku_id, request_id, user_id, token_id, created_at, expire_at, last_event_id, `
	setOrder    = `campaign_id = $2, sku_id = $3, request_id = $4, user_id = $5, token_id = $6, created_at = $7, expire_at = $8,
    last_event_id = $9, updated_at = now()`
)

// queueCreates queues one statement making the orders of the new
// reservation.created events among events.
func queueCreates(b *pgx.Batch, events []client.Event, fresh []bool) error {
	var ids, campaigns, skus, requests, users, eventIDs []string
	var tokens []int64
	var created, expire []time.Time
	for i := range events {
		if !fresh[i] || events[i].Type != client.TypeReservationCreated {
			continue
		}
		d, _, err := events[i].Reservation()
		if err != nil {
			return err
		}
		ids, campaigns, skus, requests, users = append(ids, d.ReservationID), append(campaigns, d.CampaignID), append(skus, d.SKUID),
			append(requests, d.RequestID), append(users, d.UserID)
		tokens, created, expire, eventIDs = append(tokens, int64(d.TokenID)), append(created, d.CreatedAt), append(expire, d.ExpireAt), append(eventIDs, events[i].ID)
	}
	if len(ids) > 0 {
		b.Queue(insertOrder+`state)
SELECT r.*, 'PENDING_PAYMENT' FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::timestamptz[],
    $8::timestamptz[], $9::text[]) AS r
ON CONFLICT (reservation_id) DO UPDATE SET campaign_id = EXCLUDED.campaign_id, sku_id = EXCLUDED.sku_id, request_id = EXCLUDED.request_id,
    user_id = EXCLUDED.user_id, token_id = EXCLUDED.token_id, created_at = EXCLUDED.created_at, expire_at = EXCLUDED.expire_at,
    last_event_id = EXCLUDED.last_event_id, updated_at = now()`, ids, campaigns, skus, requests, users, tokens, created, expire, eventIDs)
	}
	return nil
}

// queueEffect queues what e does to its reservation's order: an order
// follows its reservation, event by event, in log order. Events that are
// not about a reservation (definitions, pauses, cells' grants) do nothing.
func queueEffect(b *pgx.Batch, e *client.Event) error {
	d, isReservation, err := e.Reservation()
	if err != nil || !isReservation {
		return err
	}
	order := []any{d.ReservationID, d.CampaignID, d.SKUID, d.RequestID, d.UserID, int64(d.TokenID), d.CreatedAt, d.ExpireAt, e.ID}
	switch e.Type {
	case client.TypeReservationCreated:
		b.Queue(insertOrder+`state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PENDING_PAYMENT')
ON CONFLICT (reservation_id) DO UPDATE SET `+setOrder, order...)
	case client.TypeReservationPaid:
		b.Queue(insertOrder+`state, paid_at, payment_id, amount)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PAID', $10, $11, $12)
ON CONFLICT (reservation_id) DO UPDATE SET state = 'PAID', paid_at = $10, payment_id = $11, amount = $12, `+setOrder,
			append(order, e.Time, d.PaymentID, d.Amount)...)
	case client.TypeReservationClosed:
		b.Queue(insertOrder+`state, closed_at, close_reason, token_released)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'CLOSED', $10, $11, $12)
ON CONFLICT (reservation_id) DO UPDATE SET state = 'CLOSED', closed_at = $10, close_reason = $11, token_released = $12, `+setOrder,
			append(order, e.Time, d.Reason, d.TokenReleased)...)
	case client.TypeReservationReleased: // an operator put a closed reservation's unit back on sale
		b.Queue(insertOrder+`state, token_released) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'CLOSED', true)
ON CONFLICT (reservation_id) DO UPDATE SET token_released = true, `+setOrder, order...)
	case client.TypeRefundRequired:
		// Money to give back: a payment after the close (the order becomes
		// REFUND_REQUIRED), or a second payment_id on a paid one (it stays
		// PAID); either way one refund row per payment.
		b.Queue(`INSERT INTO order_refunds (reservation_id, payment_id, amount, required_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (reservation_id, payment_id) DO NOTHING`, d.ReservationID, d.PaymentID, d.Amount, e.Time)
		b.Queue(`UPDATE orders SET state = 'REFUND_REQUIRED', last_event_id = $2, updated_at = now()
WHERE reservation_id = $1 AND state = 'CLOSED'`, d.ReservationID, e.ID)
	}
	return nil
}
