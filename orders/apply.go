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
// transaction: each event is recorded in order_events first, and applied
// only if that record is new.
func (s *Store) Apply(ctx context.Context, consumer string, events []client.Event, cursor string) (Applied, error) {
	done := Applied{Fresh: make([]bool, len(events))}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for i := range events {
			fresh, err := applyEvent(ctx, tx, &events[i], false)
			if err != nil {
				return err
			}
			done.Fresh[i] = fresh
		}
		_, err := tx.Exec(ctx, `INSERT INTO order_cursors (consumer, cursor) VALUES ($1, $2)
ON CONFLICT (consumer) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = now()`, consumer, cursor)
		return err
	})
	if err != nil {
		return Applied{}, err
	}
	done.Committed = time.Now()
	return done, nil
}

// applyEvent records e and, if it is new (or again is set), applies it:
// fresh is false for an event applied before.
func applyEvent(ctx context.Context, tx pgx.Tx, e *client.Event, again bool) (fresh bool, err error) {
	tag, err := tx.Exec(ctx, `INSERT INTO order_events (source, id, type, subject, seckill_index, event_time, data)
VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, $7) ON CONFLICT (source, id) DO NOTHING`,
		e.Source, e.ID, e.Type, e.Subject, int64(e.SeckillIndex), e.Time, []byte(e.Data))
	if err != nil {
		return false, fmt.Errorf("event %s: %w", e.ID, err)
	}
	if tag.RowsAffected() == 0 && !again {
		return false, nil
	}
	d, isReservation, err := e.Reservation()
	if err != nil || !isReservation {
		return tag.RowsAffected() == 1, err // definitions, pauses, cells' grants: recorded, nothing to apply
	}
	if err := applyReservationEvent(ctx, tx, e, d); err != nil {
		return false, fmt.Errorf("event %s (%s): %w", e.ID, e.Type, err)
	}
	return tag.RowsAffected() == 1, nil
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

// applyReservationEvent moves the order of d's reservation as the event
// says: an order follows its reservation, event by event, in log order.
func applyReservationEvent(ctx context.Context, tx pgx.Tx, e *client.Event, d client.ReservationData) error {
	order := []any{d.ReservationID, d.CampaignID, d.SKUID, d.RequestID, d.UserID, int64(d.TokenID), d.CreatedAt, d.ExpireAt, e.ID}
	var err error
	switch e.Type {
	case client.TypeReservationCreated:
		_, err = tx.Exec(ctx, insertOrder+`state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PENDING_PAYMENT')
ON CONFLICT (reservation_id) DO UPDATE SET `+setOrder, order...)
	case client.TypeReservationPaid:
		_, err = tx.Exec(ctx, insertOrder+`state, paid_at, payment_id, amount)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PAID', $10, $11, $12)
ON CONFLICT (reservation_id) DO UPDATE SET state = 'PAID', paid_at = $10, payment_id = $11, amount = $12, `+setOrder,
			append(order, e.Time, d.PaymentID, d.Amount)...)
	case client.TypeReservationClosed:
		_, err = tx.Exec(ctx, insertOrder+`state, closed_at, close_reason, token_released)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'CLOSED', $10, $11, $12)
ON CONFLICT (reservation_id) DO UPDATE SET state = 'CLOSED', closed_at = $10, close_reason = $11, token_released = $12, `+setOrder,
			append(order, e.Time, d.Reason, d.TokenReleased)...)
	case client.TypeReservationReleased: // an operator put a closed reservation's unit back on sale
		_, err = tx.Exec(ctx, insertOrder+`state, token_released) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'CLOSED', true)
ON CONFLICT (reservation_id) DO UPDATE SET token_released = true, `+setOrder, order...)
	case client.TypeRefundRequired:
		// Money to give back: a payment after the close (the order becomes
		// REFUND_REQUIRED), or a second payment_id on a paid one (it stays
		// PAID); either way one refund row per payment.
		if _, err = tx.Exec(ctx, `INSERT INTO order_refunds (reservation_id, payment_id, amount, required_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (reservation_id, payment_id) DO NOTHING`, d.ReservationID, d.PaymentID, d.Amount, e.Time); err == nil {
			_, err = tx.Exec(ctx, `UPDATE orders SET state = 'REFUND_REQUIRED', last_event_id = $2, updated_at = now()
WHERE reservation_id = $1 AND state = 'CLOSED'`, d.ReservationID, e.ID)
		}
	}
	return err
}
