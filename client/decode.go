package client

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/valyala/fastjson"
)

// The answers every reserve and status read decodes (an error body, a
// reservation) are read with fastjson, without reflection: a load
// generator decodes one per request. Keys match exactly (seckill writes
// them so), the last of a repeated key wins, other keys are ignored, and
// null reads as the zero value, as encoding/json reads them.

var parsers fastjson.ParserPool

// codes interns the reasons, so that reading one allocates nothing.
var codes = func() map[string]string {
	m := map[string]string{}
	for _, e := range []*Error{ErrSoldOut, ErrAlreadyPurchased, ErrAlreadyEntered, ErrRequestIDReused, ErrNotStarted, ErrEnded,
		ErrPaused, ErrQueueFull, ErrThrottled, ErrUnavailable, ErrResultUnknown, ErrNotFound, ErrRefundRequired,
		ErrPaymentConflict, ErrNotClosable, ErrWrongCell, ErrCursorCompacted, ErrCursorDiverged, ErrUnauthorized,
		ErrEntryPassRequired, ErrEntryPassInvalid, ErrEntryPassExpired, ErrSubjectLimit, ErrBadRequest} {
		m[e.Code] = e.Code
	}
	for _, s := range []string{StatePendingPayment, StatePaid, StateClosed, "CANCELLED", "EXPIRED"} {
		m[s] = s
	}
	return m
}()

// readError reads an error body ({"error": CODE, ...}) into e.
func readError(body []byte, e *Error) error {
	return visit(body, func(key []byte, v *fastjson.Value) (err error) {
		switch string(key) {
		case "error":
			e.Code, err = text(v, true)
		case "detail":
			e.Detail, err = text(v, false)
		case "reservation_id":
			e.ReservationID, err = text(v, false)
		case "sku_id":
			e.SKUID, err = text(v, false)
		case "status_url":
			e.StatusURL, err = text(v, false)
		case "first_index":
			e.FirstIndex, err = unsigned(v, math.MaxUint64)
		case "fork_index":
			e.ForkIndex, err = unsigned(v, math.MaxUint64)
		case "history":
			e.History, err = text(v, false)
		}
		return err
	})
}

// UnmarshalJSON reads a reservation as the server writes it (times in
// RFC 3339; "" and absent are zero); null leaves r as it is, as
// encoding/json's convention asks.
func (r *Reservation) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	*r = Reservation{}
	return visit(b, func(key []byte, v *fastjson.Value) (err error) {
		switch string(key) {
		case "reservation_id":
			r.ReservationID, err = text(v, false)
		case "request_id":
			r.RequestID, err = text(v, false)
		case "user_id":
			r.UserID, err = text(v, false)
		case "state":
			r.State, err = text(v, true)
		case "token_id":
			var t uint64
			t, err = unsigned(v, math.MaxUint32)
			r.TokenID = uint32(t)
		case "created_at":
			r.CreatedAt, err = timestamp(v)
		case "expire_at":
			r.ExpireAt, err = timestamp(v)
		case "paid_at":
			r.PaidAt, err = timestamp(v)
		case "payment_id":
			r.PaymentID, err = text(v, false)
		case "closed_at":
			r.ClosedAt, err = timestamp(v)
		case "closed_reason":
			r.ClosedReason, err = text(v, true)
		case "refund_required":
			if v.Type() != fastjson.TypeNull {
				r.RefundRequired, err = v.Bool()
			}
		case "status_url":
			r.StatusURL, err = text(v, false)
		}
		return err
	})
}

// UnmarshalJSON reads an export's row: the reservation (Reservation's
// decoder), then its two fields of the export.
func (r *ExportRow) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	if err := r.Reservation.UnmarshalJSON(b); err != nil {
		return err
	}
	r.Amount, r.TokenReleased = nil, false
	return visit(b, func(key []byte, v *fastjson.Value) (err error) {
		switch {
		case v.Type() == fastjson.TypeNull:
		case string(key) == "amount":
			var amount int64
			amount, err = v.Int64()
			r.Amount = &amount
		case string(key) == "token_released":
			r.TokenReleased, err = v.Bool()
		}
		return err
	})
}

// visit parses body as one JSON object and calls field for each member,
// stopping at its first error.
func visit(body []byte, field func(key []byte, v *fastjson.Value) error) error {
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return err
	}
	o, err := v.Object()
	if err != nil {
		return err
	}
	o.Visit(func(key []byte, v *fastjson.Value) {
		if err == nil {
			if err = field(key, v); err != nil {
				err = fmt.Errorf("%s: %w", key, err)
			}
		}
	})
	return err
}

// text reads a string ("" for null); interned: a reason or a state.
func text(v *fastjson.Value, interned bool) (string, error) {
	if v.Type() == fastjson.TypeNull {
		return "", nil
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", err
	}
	if s, ok := codes[string(b)]; interned && ok {
		return s, nil
	}
	return string(b), nil
}

// unsigned reads a whole number up to limit (0 for null).
func unsigned(v *fastjson.Value, limit uint64) (uint64, error) {
	if v.Type() == fastjson.TypeNull {
		return 0, nil
	}
	n, err := v.Uint64()
	if err == nil && n > limit {
		err = fmt.Errorf("%d is out of range", n)
	}
	return n, err
}

// timestamp reads an RFC 3339 time ("" and null: zero).
func timestamp(v *fastjson.Value) (time.Time, error) {
	if v.Type() == fastjson.TypeNull {
		return time.Time{}, nil
	}
	b, err := v.StringBytes()
	if err != nil || len(b) == 0 {
		return time.Time{}, err
	}
	if t, ok := millisUTC(b); ok {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, string(b))
}

// millisUTC reads seckill's own layout, 2006-01-02T15:04:05.000Z, without
// allocating; ok is false for anything else (time.Parse reads it then).
func millisUTC(b []byte) (time.Time, bool) {
	if len(b) != 24 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[23] != 'Z' {
		return time.Time{}, false
	}
	n := func(i, j int) int {
		v := 0
		for _, c := range b[i:j] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day, hour, minute, second, ms := n(0, 4), n(5, 7), n(8, 10), n(11, 13), n(14, 16), n(17, 19), n(20, 23)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || ms < 0 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, ms*1e6, time.UTC)
	return t, t.Day() == day // else the day is past the month's end: time.Parse says so
}
