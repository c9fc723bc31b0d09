package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event types of the feed that concern a reservation (docs/feed.md lists
// every type).
const (
	TypeReservationCreated  = "seckill.reservation.created"
	TypeReservationPaid     = "seckill.reservation.paid"
	TypeReservationClosed   = "seckill.reservation.closed"
	TypeReservationReleased = "seckill.reservation.released"
	TypeRefundRequired      = "seckill.payment.refund_required"
)

// Event is one CloudEvents event of the feed. Source + ID name it: the
// same durable record always has the same id and payload, and any event
// may arrive twice, so a consumer applies an event only if its
// (Source, ID) is new to it.
type Event struct {
	SpecVersion  string          `json:"specversion"`
	ID           string          `json:"id"`
	Source       string          `json:"source"` // /seckill/{campaign}/{sku}
	Type         string          `json:"type"`
	Subject      string          `json:"subject,omitempty"` // the reservation id, where there is one
	Time         time.Time       `json:"time"`              // when the record was decided
	SeckillIndex uint64          `json:"seckillindex"`      // its log index
	Data         json.RawMessage `json:"data"`
	// Raw is the event as the server sent it (for a relay to pass on).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw bytes beside the fields.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	if err := json.Unmarshal(b, (*plain)(e)); err != nil {
		return err
	}
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ReservationData is the data of a reservation event: the reservation's
// immutable fields, which every such event carries, and the event's own.
type ReservationData struct {
	CampaignID    string    `json:"campaign_id"`
	SKUID         string    `json:"sku_id"`
	ReservationID string    `json:"reservation_id"`
	RequestID     string    `json:"request_id"`
	UserID        string    `json:"user_id"`
	TokenID       uint32    `json:"token_id"`
	CreatedAt     time.Time `json:"created_at"`
	ExpireAt      time.Time `json:"expire_at"`
	// paid and refund_required
	PaymentID string `json:"payment_id,omitempty"`
	Amount    int64  `json:"amount,omitempty"`
	// closed: CANCELLED or EXPIRED, and whether the unit went back on sale
	Reason        string `json:"reason,omitempty"`
	TokenReleased bool   `json:"token_released,omitempty"`
}

// Reservation decodes the data of a reservation event (the Type*
// constants above); ok is false for the other types.
func (e *Event) Reservation() (d ReservationData, ok bool, err error) {
	switch e.Type {
	case TypeReservationCreated, TypeReservationPaid, TypeReservationClosed, TypeReservationReleased, TypeRefundRequired:
	default:
		return d, false, nil
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return d, true, fmt.Errorf("event %s: %w", e.ID, err)
	}
	if d.ReservationID == "" {
		return d, true, fmt.Errorf("event %s (%s) has no reservation_id", e.ID, e.Type)
	}
	return d, true, nil
}

// FeedRequest names a feed and a position in it.
type FeedRequest struct {
	CampaignID string
	// SKUID names one SKU's feed; empty: the campaign's feeds merged (at
	// most 88 SKUs).
	SKUID string
	// After is the cursor to read after ("": the start of the retained log).
	After string
	// Limit is the events per page (1..1000; 0: the server's 1,000).
	Limit int
	// Wait makes a page a long poll (at most 60 s).
	Wait time.Duration
	// Types keeps only these event types; empty: every type but
	// seckill.request.rejected.
	Types []string
}

func (f FeedRequest) path() string {
	p := "/admin/campaigns/" + url.PathEscape(f.CampaignID)
	if f.SKUID != "" {
		p = pathAdminSKU(f.CampaignID, f.SKUID)
	}
	q := url.Values{}
	if f.After != "" {
		q.Set("after", f.After)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Wait > 0 {
		q.Set("wait", strconv.FormatInt(int64(f.Wait/time.Millisecond), 10)+"ms")
	}
	if len(f.Types) > 0 {
		q.Set("types", strings.Join(f.Types, ","))
	}
	if len(q) == 0 {
		return p + "/events"
	}
	return p + "/events?" + q.Encode()
}

// FeedPage is one page of a feed. Save NextCursor once the page's events
// are applied, also when Events is empty (the types filter moves it).
type FeedPage struct {
	Events       []Event `json:"events"`
	NextCursor   string  `json:"next_cursor"`
	FirstIndex   uint64  `json:"first_index"`
	DurableIndex uint64  `json:"durable_index"`
}

// Feed reads one page after f.After. ErrCursorCompacted (410: resync from
// Export) and ErrCursorDiverged (409: the SKU was restored) need the
// consumer's decision; other failures are retried as usual.
func (c *Client) Feed(ctx context.Context, f FeedRequest) (*FeedPage, error) {
	a, err := c.do(ctx, request{method: http.MethodGet, path: f.path(), admin: true, extra: f.Wait})
	if err != nil {
		return nil, err
	}
	var p FeedPage
	return &p, decode(a, &p, "feed")
}

// Stream reads the feed as Server-Sent Events from f.After and calls
// handle for each event with the cursor as of it (save it once the event
// is applied). A dropped stream is opened again after the last event
// handled (Last-Event-ID), or after the id: the stream sent alone past
// records the request's types leave out, if later (handle is not called
// for it: a consumer resuming from its saved cursor reads those records
// again). It returns handle's error, ctx's, or an answer
// a retry cannot pass (ErrCursorCompacted, ErrCursorDiverged, 4xx).
func (c *Client) Stream(ctx context.Context, f FeedRequest, handle func(e Event, cursor string) error) error {
	cursor := f.After
	f.After, f.Wait = "", 0
	for failures := 0; ; {
		var handled bool
		var stop error // handle's error, or the stream's event: error
		header := http.Header{}
		if cursor != "" {
			header.Set("Last-Event-ID", cursor)
		}
		_, err := c.do(ctx, request{method: http.MethodGet, path: f.path(), admin: true, accept: "text/event-stream", header: header,
			extra: 365 * 24 * time.Hour, // a stream has no end: ctx bounds it
			stream: func(resp *http.Response) error {
				return readSSE(resp, func(id, typ string, data []byte) error {
					if data == nil { // an id: alone
						cursor = id
						return nil
					}
					if typ == "error" {
						e := decodeError(answer{status: statusOfStreamError(data), body: data})
						stop = e
						return e
					}
					var e Event
					if err := json.Unmarshal(data, &e); err != nil {
						stop = fmt.Errorf("seckill: stream: event %s: %w", id, err)
						return stop
					}
					if err := handle(e, id); err != nil {
						stop = err
						return err
					}
					cursor, handled = id, true
					return nil
				})
			}})
		var e *Error
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case stop != nil && errors.As(stop, &e) && e.retryable():
		case stop != nil:
			return stop
		case errors.As(err, &e):
			return err // do retried what could be
		}
		if handled {
			failures = 0
		}
		failures++
		select {
		case <-time.After(backoff(failures)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// statusOfStreamError maps the reason of an event: error onto the status
// the same answer has on a page.
func statusOfStreamError(data []byte) int {
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	switch e.Error {
	case "CURSOR_COMPACTED":
		return http.StatusGone
	case "CURSOR_DIVERGED":
		return http.StatusConflict
	case "BAD_CURSOR", "BAD_REQUEST", "CAMPAIGN_FEED_TOO_WIDE":
		return http.StatusBadRequest
	case "NOT_FOUND":
		return http.StatusNotFound
	case "QUEUE_FULL", "THROTTLED":
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}

// readSSE reads a text/event-stream body and calls event for each event,
// and with nil data for each message of an id: alone (comments and
// retry: lines are skipped).
func readSSE(resp *http.Response, event func(id, typ string, data []byte) error) error {
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var id, typ string
	var data bytes.Buffer
	sawID := false // in this message
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return err // EOF included: the caller reopens
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			switch {
			case data.Len() > 0:
				if err := event(id, typ, data.Bytes()); err != nil {
					return err
				}
			case sawID:
				if err := event(id, "", nil); err != nil {
					return err
				}
			}
			typ, sawID = "", false
			data.Reset()
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "id":
				id, sawID = string(value), true
			case "event":
				typ = string(value)
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(value)
			}
		}
	}
}

// ExportEnd is the last line of an export: the log index it is as of and
// the feed cursor to read after it.
type ExportEnd struct {
	AsOfIndex  uint64 `json:"as_of_index"`
	NextCursor string `json:"next_cursor"`
}

// ExportRow is one reservation of an export: its view, and what only its
// events carry besides (the server's feed.ExportRow), so that a row taken
// from the export is the row its events build.
type ExportRow struct {
	Reservation
	// Amount is a PAID reservation's payment amount (minor units); nil
	// for the others.
	Amount *int64 `json:"amount,omitempty"`
	// TokenReleased says that a CLOSED reservation's token went back on
	// sale (with the close, or later by an operator's release).
	TokenReleased bool `json:"token_released,omitempty"`
}

// Export reads every reservation of a SKU as of one durable log index
// (GET .../reservations, admin) and calls row for each, in sequence
// order. A consumer whose cursor was compacted replaces its rows of the
// SKU with these and reads the SKU's feed after the end's NextCursor.
func (c *Client) Export(ctx context.Context, campaignID, skuID string, row func(ExportRow) error) (ExportEnd, error) {
	var end ExportEnd
	var complete bool
	_, err := c.do(ctx, request{method: http.MethodGet, path: pathAdminSKU(campaignID, skuID) + "/reservations", admin: true,
		extra: 10 * time.Minute, // millions of rows stream for a while
		stream: func(resp *http.Response) error {
			lines := bufio.NewScanner(resp.Body)
			lines.Buffer(make([]byte, 64<<10), 1<<20)
			for lines.Scan() {
				b := lines.Bytes()
				if bytes.HasPrefix(b, []byte(`{"as_of_index"`)) {
					complete = true
					return json.Unmarshal(b, &end)
				}
				var r ExportRow
				if err := r.UnmarshalJSON(b); err != nil {
					return fmt.Errorf("seckill: export: %w", err)
				}
				if err := row(r); err != nil {
					return err
				}
			}
			return lines.Err()
		}})
	if err == nil && !complete {
		err = errors.New("seckill: export ended before its last line (the server stopped?)")
	}
	return end, err
}
