package orders

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Order is a row of orders.
type Order struct {
	ReservationID string
	CampaignID    string
	SKUID         string
	RequestID     string
	UserID        string
	TokenID       uint32
	State         string
	CreatedAt     time.Time
	PaymentID     string
	Amount        *int64   // the payment's, set by a PAID event (NULL: none)
	TokenReleased bool     // a closed order's token went back on sale
	Refunds       []string // payment ids in order_refunds
	LastEventID   string
}

// Order states (the orders table's CHECK).
const (
	StatePendingPayment = "PENDING_PAYMENT"
	StatePaid           = "PAID"
	StateClosed         = "CLOSED"
	StateRefundRequired = "REFUND_REQUIRED"
)

// Querier is what Load reads through (a *pgx.Conn, a *pgxpool.Pool, a
// transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Load reads a campaign's orders (of one SKU when skuID is set), with
// their refund rows, in one REPEATABLE READ snapshot when q is a
// transaction of that level (seckillctl reconcile's is).
func Load(ctx context.Context, q Querier, campaignID, skuID string) (map[string]*Order, error) {
	rows, err := q.Query(ctx, `SELECT reservation_id, campaign_id, sku_id, request_id, user_id, token_id, state, created_at,
    coalesce(payment_id, ''), amount, token_released, last_event_id
FROM orders WHERE campaign_id = $1 AND ($2 = '' OR sku_id = $2)`, campaignID, skuID)
	if err != nil {
		return nil, err
	}
	byID := map[string]*Order{}
	for rows.Next() {
		var o Order
		var token int64
		if err := rows.Scan(&o.ReservationID, &o.CampaignID, &o.SKUID, &o.RequestID, &o.UserID, &token, &o.State, &o.CreatedAt,
			&o.PaymentID, &o.Amount, &o.TokenReleased, &o.LastEventID); err != nil {
			rows.Close()
			return nil, err
		}
		o.TokenID = uint32(token)
		byID[o.ReservationID] = &o
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, `SELECT r.reservation_id, r.payment_id FROM order_refunds r JOIN orders o USING (reservation_id)
WHERE o.campaign_id = $1 AND ($2 = '' OR o.sku_id = $2) ORDER BY r.required_at, r.payment_id`, campaignID, skuID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, payment string
		if err := rows.Scan(&id, &payment); err != nil {
			return nil, err
		}
		byID[id].Refunds = append(byID[id].Refunds, payment)
	}
	return byID, rows.Err()
}

// RefundNotInSeckill is SetApart's reason for refund rows a re-anchoring
// moved to diverged_refunds (the restored seckill no longer lists them).
const RefundNotInSeckill = "REFUND_NOT_IN_SECKILL"

// SetApart counts the rows re-anchorings (Reanchor) set apart of one SKU
// for one reason: sales and money the restored seckill no longer knows
// of, which no comparison with seckill shows, for the payment team to
// settle.
type SetApart struct {
	SKUID string `json:"sku_id"`
	// Reason is a reason of diverged_orders (DivergedNotInSeckill,
	// DivergedOtherSale, DivergedRewound), or RefundNotInSeckill for rows
	// of diverged_refunds.
	Reason string `json:"reason"`
	// Rows counts them; WithMoney those that held money: orders with a
	// payment, refund rows not refunded.
	Rows      int64 `json:"rows"`
	WithMoney int64 `json:"with_money"`
}

// LoadSetApart counts what re-anchorings set apart of a campaign (of one
// SKU when skuID is set), by SKU and reason.
func LoadSetApart(ctx context.Context, q Querier, campaignID, skuID string) ([]SetApart, error) {
	rows, err := q.Query(ctx, `SELECT r.sku_id, d.reason, count(*), count(d.payment_id)
FROM diverged_orders d JOIN order_reanchors r ON r.id = d.reanchor_id
WHERE r.campaign_id = $1 AND ($2 = '' OR r.sku_id = $2) GROUP BY 1, 2
UNION ALL SELECT r.sku_id, $3, count(*), count(*) FILTER (WHERE f.refunded_at IS NULL)
FROM diverged_refunds f JOIN order_reanchors r ON r.id = f.reanchor_id
WHERE r.campaign_id = $1 AND ($2 = '' OR r.sku_id = $2) GROUP BY 1
ORDER BY 1, 2`, campaignID, skuID, RefundNotInSeckill)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []SetApart{}
	for rows.Next() {
		var s SetApart
		if err := rows.Scan(&s.SKUID, &s.Reason, &s.Rows, &s.WithMoney); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
