// Package reconcile compares seckill's ledger of a campaign (its
// reservations, as the export or a data dir gives them, and each SKU's
// counts) with an order database (package orders) and lists the concrete
// differences by reservation_id and request_id, each with the idempotent
// action that repairs it. Equal totals prove nothing: every reservation is
// matched to its order, one by one. Compare is pure; sources.go reads the
// order database and a running seckilld (seckillctl reconcile also reads
// data dirs offline).
package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seckill/seckill/orders"
)

// Reservation is one reservation on seckill's side.
type Reservation struct {
	ReservationID string
	RequestID     string
	UserID        string
	SKUID         string
	TokenID       uint32
	State         string // PENDING_PAYMENT, PAID, CLOSED
	PaymentID     string
	// Amount is a PAID reservation's payment amount (nil for the others),
	// TokenReleased whether a CLOSED one's token went back on sale: what
	// an order holds of them (feed.NewExportRow is the rule).
	Amount        *int64
	TokenReleased bool
	CreatedAt     time.Time
	// ChangedAt is its last change (created, paid, closed, or a refund).
	ChangedAt time.Time
	// Refunds are the payment ids seckill recorded for refund.
	Refunds []string
}

// SKU is one SKU's counts on seckill's side.
type SKU struct {
	SKUID                                     string
	SaleLimit, Available, Reserved, Confirmed int64
	// Cell is set for a celled SKU's share: then Granted - Returned, not
	// SaleLimit, is what the other three add up to.
	Cell              string
	Granted, Returned int64
}

// Kinds of difference.
const (
	// MissingOrder: a reservation older than the lag with no order.
	MissingOrder = "MISSING_ORDER"
	// OrphanOrder: an order whose reservation seckill does not have.
	OrphanOrder = "ORPHAN_ORDER"
	// StateMismatch: the order's state is not its reservation's (PAID in
	// seckill, PENDING_PAYMENT in orders; CLOSED with a refund required
	// but not REFUND_REQUIRED, ...).
	StateMismatch = "STATE_MISMATCH"
	// RefundNotRecorded: a payment seckill recorded for refund that
	// order_refunds lacks.
	RefundNotRecorded = "REFUND_NOT_RECORDED"
	// RefundNotInSeckill: a refund row of order_refunds for a payment
	// seckill did not record for refund (the payment that paid the
	// reservation, or one seckill does not know): the order service applied
	// another history, as after a restore its orders were not re-anchored
	// after. No re-delivery repairs it.
	RefundNotInSeckill = "REFUND_NOT_IN_SECKILL"
	// TokenNotInOrders: a unit sold (its reservation PAID) that no order
	// holds: the order is missing, or names another token.
	TokenNotInOrders = "TOKEN_NOT_IN_ORDERS"
	// FieldMismatch: the order's request, user, SKU, token, payment (id
	// or amount) or token release is not its reservation's.
	FieldMismatch = "FIELD_MISMATCH"
	// UnbalancedSKU: seckill's own counts do not add up
	// (sale_limit = available + reserved + confirmed).
	UnbalancedSKU = "UNBALANCED_SKU"
)

// Difference is one concrete difference.
type Difference struct {
	Kind          string `json:"kind"`
	ReservationID string `json:"reservation_id"`
	RequestID     string `json:"request_id,omitempty"`
	SKUID         string `json:"sku_id,omitempty"`
	Seckill       string `json:"seckill"` // what seckill holds ("-": nothing)
	Orders        string `json:"orders"`  // what the order database holds
	Repair        string `json:"repair"`  // the idempotent action
	// Source and Events name, once NameEvents read them from the feed,
	// the reservation's events in log order (CloudEvents source and ids):
	// the repair re-delivers exactly these.
	Source string   `json:"source,omitempty"`
	Events []string `json:"events,omitempty"`
}

// Totals sets a SKU's counts beside the orders' (equal totals prove
// nothing; they are shown so that a reader sees the scale).
type Totals struct {
	SKUID string `json:"sku_id"`
	// seckill's counts: SaleLimit = Available + Reserved + Confirmed on
	// one node (Balanced).
	SaleLimit int64 `json:"sale_limit"`
	Available int64 `json:"available"`
	Reserved  int64 `json:"reserved"`
	Confirmed int64 `json:"confirmed"`
	Balanced  bool  `json:"balanced"`
	// Reservations by state in seckill, and orders by state.
	Seckill map[string]int64 `json:"seckill_reservations"`
	Orders  map[string]int64 `json:"orders"`
}

// Report is the result of a comparison.
type Report struct {
	CampaignID  string       `json:"campaign_id"`
	SKUID       string       `json:"sku_id,omitempty"`
	Lag         string       `json:"lag"`
	Compared    int          `json:"reservations_compared"`
	InFlight    int          `json:"in_flight"` // changed within the lag: not judged yet
	Differences []Difference `json:"differences"`
	Totals      []Totals     `json:"totals"`
	Clean       bool         `json:"clean"`
	// SetApart is what re-anchorings set apart (diverged_orders,
	// diverged_refunds: LoadSetApart), by SKU and reason: not a
	// difference (the orders left match seckill), but sales and money
	// for the payment team to settle. Compare leaves it to its caller.
	SetApart []orders.SetApart `json:"set_apart"`
}

// Compare lists the differences between seckill's reservations and skus
// and the orders (by reservation id). A reservation whose last change is
// within lag of now is in flight (the order service may not have applied
// it yet): counted, not judged, unless its order exists and is ahead.
func Compare(campaignID, skuID string, reservations []Reservation, skus []SKU, byID map[string]*orders.Order, lag time.Duration, now time.Time) Report {
	r := Report{CampaignID: campaignID, SKUID: skuID, Lag: lag.String(), Differences: []Difference{}}
	seen := make(map[string]bool, len(reservations))
	totals := map[string]*Totals{}
	for _, s := range skus {
		totals[s.SKUID] = &Totals{SKUID: s.SKUID, SaleLimit: s.SaleLimit, Available: s.Available, Reserved: s.Reserved, Confirmed: s.Confirmed,
			Balanced: s.Available+s.Reserved+s.Confirmed == map[bool]int64{false: s.SaleLimit, true: s.Granted - s.Returned}[s.Cell != ""], Seckill: map[string]int64{}, Orders: map[string]int64{}}
	}
	total := func(sku string) *Totals {
		if totals[sku] == nil {
			totals[sku] = &Totals{SKUID: sku, Seckill: map[string]int64{}, Orders: map[string]int64{}}
		}
		return totals[sku]
	}
	for i := range reservations {
		res := &reservations[i]
		seen[res.ReservationID] = true
		total(res.SKUID).Seckill[res.State]++
		r.Compared++
		o := byID[res.ReservationID]
		inFlight := now.Sub(res.ChangedAt) < lag
		diffs := compareOne(res, o)
		if inFlight && (o == nil || behind(o, res)) {
			r.InFlight++
			continue
		}
		r.Differences = append(r.Differences, diffs...)
	}
	for id, o := range byID {
		total(o.SKUID).Orders[o.State]++
		if !seen[id] {
			r.Differences = append(r.Differences, Difference{Kind: OrphanOrder, ReservationID: id, RequestID: o.RequestID, SKUID: o.SKUID,
				Seckill: "-", Orders: describeOrder(o),
				Repair: "no such reservation in seckill (another history: a restored SKU, another campaign's events?): check order " + id +
					" by hand; if no payment is attached close it on the order side (UPDATE orders SET state = 'CLOSED' WHERE reservation_id = '" + id + "'); seckill needs nothing"})
		}
	}
	slices.SortFunc(r.Differences, func(a, b Difference) int {
		return strings.Compare(a.SKUID+"\x00"+a.ReservationID+"\x00"+a.Kind, b.SKUID+"\x00"+b.ReservationID+"\x00"+b.Kind)
	})
	for _, id := range slices.Sorted(maps.Keys(totals)) {
		t := totals[id]
		if !t.Balanced && t.SaleLimit > 0 {
			r.Differences = append(r.Differences, Difference{Kind: UnbalancedSKU, SKUID: id,
				Seckill: fmt.Sprintf("sale_limit %d != available %d + reserved %d + confirmed %d", t.SaleLimit, t.Available, t.Reserved, t.Confirmed),
				Orders:  "-", Repair: "seckill's own invariant fails: run seckillctl verify on the SKU's data dir and stop the sale"})
		}
		r.Totals = append(r.Totals, *t)
	}
	r.Clean = len(r.Differences) == 0
	return r
}

// expected is the order state that follows a reservation.
func expected(res *Reservation) string {
	if res.State == orders.StateClosed && len(res.Refunds) > 0 {
		return orders.StateRefundRequired
	}
	return res.State
}

// behind reports whether order o has not yet caught up with res: in an
// earlier state on res's path (PENDING_PAYMENT, then PAID, or CLOSED then
// REFUND_REQUIRED), or in its state with fewer refunds. In flight, not a
// difference, within the lag; an order in a state res never passes through
// (CLOSED for PAID, PAID for CLOSED) is not behind.
func behind(o *orders.Order, res *Reservation) bool {
	want := expected(res)
	earlier := o.State != want && (o.State == orders.StatePendingPayment ||
		o.State == orders.StateClosed && want == orders.StateRefundRequired)
	return earlier || o.State == want && len(o.Refunds) < len(res.Refunds)
}

// redeliver is the repair of an order that lacks some of its
// reservation's events, by reservation id (NameEvents makes it one by
// event ids where it can read the feed).
func redeliver(id string) string {
	return "re-deliver reservation " + id + "'s events: seckill-orders redeliver --reservation " + id +
		" (re-applies them from the feed in log order; an event applied before changes nothing)"
}

// compareOne lists the differences of one reservation and its order.
func compareOne(res *Reservation, o *orders.Order) []Difference {
	d := func(kind, seckill, ord, repair string) Difference {
		return Difference{Kind: kind, ReservationID: res.ReservationID, RequestID: res.RequestID, SKUID: res.SKUID, Seckill: seckill, Orders: ord, Repair: repair}
	}
	if o == nil {
		out := []Difference{d(MissingOrder, describe(res), "-", redeliver(res.ReservationID)+
			map[bool]string{true: "; or, if the buyer is not to have it, release it: POST /v1/reservations/" + res.ReservationID + "/cancel (a repeat answers the same)"}[res.State == orders.StatePendingPayment])}
		if res.State == orders.StatePaid {
			out = append(out, d(TokenNotInOrders, fmt.Sprintf("token %d sold (PAID)", res.TokenID), "-", redeliver(res.ReservationID)))
		}
		return out
	}
	var out []Difference
	if o.RequestID != res.RequestID || o.UserID != res.UserID || o.SKUID != res.SKUID || o.TokenID != res.TokenID {
		out = append(out, d(FieldMismatch, fmt.Sprintf("request %s user %s sku %s token %d", res.RequestID, res.UserID, res.SKUID, res.TokenID),
			fmt.Sprintf("request %s user %s sku %s token %d", o.RequestID, o.UserID, o.SKUID, o.TokenID), redeliver(res.ReservationID)))
		if res.State == orders.StatePaid && o.TokenID != res.TokenID {
			out = append(out, d(TokenNotInOrders, fmt.Sprintf("token %d sold (PAID)", res.TokenID), fmt.Sprintf("token %d", o.TokenID), redeliver(res.ReservationID)))
		}
	}
	if want := expected(res); o.State != want {
		out = append(out, d(StateMismatch, want, o.State, redeliver(res.ReservationID)))
	} else {
		if res.State == orders.StatePaid && o.PaymentID != res.PaymentID {
			out = append(out, d(FieldMismatch, "payment "+res.PaymentID, "payment "+o.PaymentID, redeliver(res.ReservationID)))
		}
		if !sameAmount(o.Amount, res.Amount) {
			out = append(out, d(FieldMismatch, "amount "+describeAmount(res.Amount), "amount "+describeAmount(o.Amount), redeliver(res.ReservationID)))
		}
		if o.TokenReleased != res.TokenReleased {
			out = append(out, d(FieldMismatch, fmt.Sprintf("token_released %t", res.TokenReleased), fmt.Sprintf("token_released %t", o.TokenReleased),
				redeliver(res.ReservationID)))
		}
	}
	for _, p := range res.Refunds {
		if !slices.Contains(o.Refunds, p) {
			out = append(out, d(RefundNotRecorded, "refund required: payment "+p, "no refund row", redeliver(res.ReservationID)))
		}
	}
	for _, p := range o.Refunds {
		if !slices.Contains(res.Refunds, p) {
			out = append(out, d(RefundNotInSeckill, seckillSideOf(res, p), "refund row: payment "+p, refundNotInSeckillRepair(res.ReservationID, p)))
		}
	}
	return out
}

// seckillSideOf says what seckill holds of payment p of res, which it did
// not record for refund.
func seckillSideOf(res *Reservation, p string) string {
	if res.State == orders.StatePaid && res.PaymentID == p {
		return "payment " + p + " paid the reservation: no refund"
	}
	return "no payment " + p
}

// refundNotInSeckillRepair is the repair of a refund row seckill does not
// list: the orders' history is not seckill's, so nothing is re-delivered.
func refundNotInSeckillRepair(id, p string) string {
	return "do not refund payment " + p + " of reservation " + id + " on this row alone: seckill recorded no refund for it. " +
		"If the SKU was restored, run seckill-orders reanchor for the campaign (it sets such rows apart in diverged_refunds); " +
		"otherwise check the payment by hand; seckill needs nothing"
}

// fromFeed reports whether d's repair re-delivers its reservation's events
// (NameEvents reads them): not for an order or refund row seckill lacks.
func fromFeed(d Difference) bool {
	return d.ReservationID != "" && d.Kind != OrphanOrder && d.Kind != RefundNotInSeckill
}

// sameAmount reports whether two amounts are both absent or equal.
func sameAmount(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func describeAmount(a *int64) string {
	if a == nil {
		return "none"
	}
	return fmt.Sprint(*a)
}

func describe(res *Reservation) string {
	s := res.State + fmt.Sprintf(" token %d", res.TokenID)
	if len(res.Refunds) > 0 {
		s += " refunds " + strings.Join(res.Refunds, ",")
	}
	return s
}

func describeOrder(o *orders.Order) string {
	return o.State + fmt.Sprintf(" token %d", o.TokenID)
}
