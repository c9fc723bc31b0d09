package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// ReserveRequest is one purchase attempt.
type ReserveRequest struct {
	CampaignID string
	SKUID      string
	// UserID is the buyer, as the gateway authenticated it.
	UserID string
	// RequestID is the idempotency key: keep it for every retry of this
	// click, also across processes. Empty: the client draws one (128
	// random bits) unless EntryPass is set, whose own request_id counts.
	RequestID string
	// EntryPass is the buyer's signed entry pass, when the SKU wants one.
	EntryPass string
}

// Reservation is a reservation as the server describes it. A 202 fills
// ReservationID, RequestID, State, TokenID, ExpireAt and StatusURL; the
// status route and the export fill the rest.
type Reservation struct {
	ReservationID  string    `json:"reservation_id"`
	RequestID      string    `json:"request_id"`
	UserID         string    `json:"user_id,omitempty"`
	State          string    `json:"state"` // PENDING_PAYMENT, PAID, CLOSED
	TokenID        uint32    `json:"token_id"`
	CreatedAt      time.Time `json:"created_at"`
	ExpireAt       time.Time `json:"expire_at"`
	PaidAt         time.Time `json:"paid_at"`
	PaymentID      string    `json:"payment_id,omitempty"`
	ClosedAt       time.Time `json:"closed_at"`
	ClosedReason   string    `json:"closed_reason,omitempty"` // CANCELLED, EXPIRED
	RefundRequired bool      `json:"refund_required,omitempty"`
	StatusURL      string    `json:"status_url,omitempty"`
}

// States of a reservation.
const (
	StatePendingPayment = "PENDING_PAYMENT"
	StatePaid           = "PAID"
	StateClosed         = "CLOSED"
)

// NewRequestID returns a random request_id (32 hex digits): unguessable,
// as a request_id should be (a repeat of it returns its reservation id).
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// reserveBody is the body of a reserve, and of a batch item.
type reserveBody struct {
	RequestID string `json:"request_id,omitempty"`
	UserID    string `json:"user_id"`
	EntryPass string `json:"entry_pass,omitempty"`
}

// appendReserveBody appends a reserve's body, as json.Marshal writes a
// reserveBody.
func appendReserveBody(b []byte, requestID, userID, entryPass string) []byte {
	b = append(b, '{')
	if requestID != "" {
		b = appendString(append(b, `"request_id":`...), requestID)
		b = append(b, ',')
	}
	b = appendString(append(b, `"user_id":`...), userID)
	if entryPass != "" {
		b = appendString(append(b, `,"entry_pass":`...), entryPass)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string: as it is when it is printable
// ASCII that needs no escape (every id seckill accepts), else as
// encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// Reserve asks for one unit: the reservation made (PENDING_PAYMENT: pay
// before ExpireAt), or an *Error: SOLD_OUT, ALREADY_PURCHASED (with the
// user's ReservationID), NOT_STARTED, ENDED, ... Retries, 504s and 421s
// are handled as the package says; every attempt carries the same
// request_id, so at most one reservation is made.
func (c *Client) Reserve(ctx context.Context, r ReserveRequest) (*Reservation, error) {
	if r.RequestID == "" && r.EntryPass == "" {
		r.RequestID = NewRequestID()
	}
	buf := c.bodyBuffer()
	body := appendReserveBody((*buf)[:0], r.RequestID, r.UserID, r.EntryPass)
	a, err := c.do(ctx, request{method: http.MethodPost, path: pathSKU(r.CampaignID, r.SKUID, "/reservations"), body: body,
		resolve: (*Client).settleReserve, resolveArg: r.UserID, borrow: true})
	if c.fast != nil {
		*buf = body
		bodies.Put(buf)
	}
	if err != nil {
		return nil, err
	}
	return decodeReservation(a, "reserve")
}

// bodies are reserve bodies for reuse over fasthttp, whose request is
// done with its body when its attempt returns (net/http may still read
// a body after, so its bodies are not reused).
var bodies = sync.Pool{New: func() any { return new([]byte) }}

// bodyBuffer returns a buffer from bodies over fasthttp, else a new one.
func (c *Client) bodyBuffer() *[]byte {
	if c.fast == nil {
		return new([]byte)
	}
	return bodies.Get().(*[]byte)
}

// settleReserve is a reserve's resolver: the lookup of its status_url
// (resolveReserve) for the user userID.
func (c *Client) settleReserve(ctx context.Context, unknown *Error, userID string) (bool, *Reservation, error) {
	o, err := c.resolveReserve(ctx, unknown.StatusURL, userID)
	if o == nil || err != nil {
		return err != nil, nil, err
	}
	settled, err := o.result()
	return true, settled, err
}

// Outcome is what became of a reserve's request_id (GET
// .../requests/{request_id}): ACCEPTED with its reservation, or the
// durable refusal SOLD_OUT or ALREADY_PURCHASED.
type Outcome struct {
	RequestID     string       `json:"request_id"`
	Outcome       string       `json:"outcome"`
	ReservationID string       `json:"reservation_id,omitempty"`
	Reservation   *Reservation `json:"reservation,omitempty"`
}

// result turns a looked-up outcome into Reserve's answer.
func (o *Outcome) result() (*Reservation, error) {
	if o.Outcome == "ACCEPTED" && o.Reservation != nil {
		r := *o.Reservation
		r.StatusURL = "/v1/reservations/" + url.PathEscape(r.ReservationID)
		return &r, nil
	}
	return nil, &Error{Status: http.StatusConflict, Code: o.Outcome, ReservationID: o.ReservationID}
}

// Lookup reads what became of a request_id on a SKU. A request the SKU
// never decided (refused at the door, or not arrived) is ErrNotFound.
func (c *Client) Lookup(ctx context.Context, campaignID, skuID, requestID string) (*Outcome, error) {
	return c.lookup(ctx, pathSKU(campaignID, skuID, "/requests/"+url.PathEscape(requestID)))
}

func (c *Client) lookup(ctx context.Context, path string) (*Outcome, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	var o Outcome
	return &o, decode(a, &o, "lookup")
}

// resolveReserve settles a reserve's 504 through its status_url (the
// request lookup): the outcome recorded, nil when the SKU decided nothing
// (the reserve is then sent again), or REQUEST_ID_REUSED when the
// request_id made another user's reservation.
func (c *Client) resolveReserve(ctx context.Context, statusURL, userID string) (*Outcome, error) {
	if statusURL == "" {
		return nil, nil
	}
	o, err := c.lookup(ctx, statusURL)
	switch {
	case err != nil:
		return nil, nil // not known yet (404, or the lookup failed): the same request again settles it
	case o.Reservation != nil && o.Reservation.UserID != userID:
		return nil, &Error{Status: http.StatusUnprocessableEntity, Code: "REQUEST_ID_REUSED"}
	}
	return o, nil
}

// BatchItem is one item of a batch reserve.
type BatchItem struct {
	UserID    string
	RequestID string // empty: drawn, as Reserve does (unless EntryPass)
	EntryPass string
}

// BatchResult is one item's answer, in the items' order: Reservation on
// a 202, else Err (an *Error).
type BatchResult struct {
	RequestID   string
	Reservation *Reservation
	Err         error
}

// ReserveBatch reserves up to 1,000 items on one SKU in one request, as a
// gateway forwards its buyers. Items answered 429, 503 or 504 are settled
// as Reserve settles them (504 by the lookup) and sent again, together,
// after the longest Retry-After, within MaxAttempts and ctx; the others
// keep their answer. An error is returned only when the first request
// fails as a whole (no item is known then). A resend that fails leaves
// each of its items with that error and the answers of the first request
// standing: a reservation made is never dropped, and an item's RequestID
// (drawn when not given) resends it without a second reservation.
func (c *Client) ReserveBatch(ctx context.Context, campaignID, skuID string, items []BatchItem) ([]BatchResult, error) {
	results := make([]BatchResult, len(items))
	bodies := make([]reserveBody, len(items))
	pending := make([]int, 0, len(items))
	for i, it := range items {
		if it.RequestID == "" && it.EntryPass == "" {
			it.RequestID = NewRequestID()
		}
		bodies[i] = reserveBody{RequestID: it.RequestID, UserID: it.UserID, EntryPass: it.EntryPass}
		results[i].RequestID = it.RequestID
		pending = append(pending, i)
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		send := make([]reserveBody, len(pending))
		for j, i := range pending {
			send[j] = bodies[i]
		}
		body, err := json.Marshal(map[string]any{"items": send})
		if err != nil {
			return nil, err
		}
		var out struct {
			Results []struct {
				Status     int             `json:"status"`
				Body       json.RawMessage `json:"body"`
				RetryAfter float64         `json:"retry_after"`
			} `json:"results"`
		}
		a, err := c.do(ctx, request{method: http.MethodPost, path: pathSKU(campaignID, skuID, "/reservations:batch"), body: body})
		if err == nil {
			err = decode(a, &out, "batch reserve")
		}
		if err == nil && len(out.Results) != len(pending) {
			err = fmt.Errorf("seckill: batch reserve: %d results for %d items", len(out.Results), len(pending))
		}
		if err != nil && attempt == 1 {
			return nil, err
		}
		if err != nil { // a resend: what the earlier requests decided stands
			for _, i := range pending {
				results[i].Err = err
			}
			return results, nil
		}
		var again []int
		var wait time.Duration
		for j, i := range pending {
			r := out.Results[j]
			if r.Status == http.StatusAccepted {
				var res Reservation
				if err := json.Unmarshal(r.Body, &res); err != nil {
					return nil, fmt.Errorf("seckill: batch reserve: item %d: %w", i, err)
				}
				results[i] = BatchResult{RequestID: res.RequestID, Reservation: &res}
				continue
			}
			e := decodeError(answer{status: r.Status, body: r.Body, retryAfter: time.Duration(r.RetryAfter * float64(time.Second))})
			results[i].Err = e
			if e.Status == http.StatusGatewayTimeout {
				if o, err := c.resolveReserve(ctx, e.StatusURL, items[i].UserID); o != nil || err != nil {
					if err == nil {
						results[i].Reservation, err = o.result()
					}
					results[i].Err = err
					continue
				}
			}
			if e.retryable() {
				again = append(again, i)
				wait = max(wait, e.RetryAfter)
			}
		}
		if len(again) == 0 || attempt >= c.maxAttempts {
			break
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return results, nil
		}
		pending = again
	}
	return results, nil
}

// SKUStatus reads a SKU's coarse status for buyers: NOT_STARTED, OPEN,
// THROTTLED, QUEUE_FULL, TEMP_SOLD_OUT, FINAL_SOLD_OUT, ENDED or PAUSED.
func (c *Client) SKUStatus(ctx context.Context, campaignID, skuID string) (string, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: pathSKU(campaignID, skuID, "")})
	if err != nil {
		return "", err
	}
	var got struct {
		Status string `json:"status"`
	}
	return got.Status, decode(a, &got, "SKU status")
}
