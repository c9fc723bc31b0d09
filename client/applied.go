package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// A consumer resumes from its cursor, an index in each SKU's log. A
// seckilld started on an older copy of its data dir keeps the history of
// the log it was copied from, so once the copy has recorded past the
// cursor the feed takes it, and the records up to it are the copy's, not
// those the consumer read: the feed cannot tell, as it never saw the
// others. The consumer can: CheckApplied compares the last event it
// applied of a SKU with the event the feed holds at that index. Every
// event carries its decision time and its record's fields, so a record
// the copy wrote after the copy's end (later, on another clock reading)
// never equals the abandoned one it replaces.

// Applied is what a consumer applied of one SKU in one history, as
// CheckApplied reads it.
type Applied struct {
	CampaignID, SKUID string
	// Last is the event applied last, at position LastAt.
	Last   Event
	LastAt uint64
	// From returns the first event applied at a position at or after p,
	// and its position (ok false: none). Positions are the consumer's own
	// and grow with the log index: the index itself for an order service,
	// a stream sequence for a relay. An event of another history than
	// Last's (one before it, or a marker of the consumer's) counts as
	// shared with the feed.
	From func(ctx context.Context, p uint64) (e Event, at uint64, ok bool, err error)
}

// CheckApplied checks that the feed holds a.Last at its log index. nil
// when it does, or when the feed no longer holds that index (snapshots
// truncated it: nothing to compare). When it does not, it finds the last
// event a consumer applied that the feed still holds (bisecting a.From)
// and returns a 409 CURSOR_DIVERGED *Error naming the SKU, with that
// event's index as ForkIndex (the index before the first event that
// differs when none is held) and no History (the copy kept the history
// the consumer read): the consumer takes the path of the feed's own 409
// (a re-anchoring sets apart what it applied after ForkIndex). When the
// SKU was restored to an earlier point instead, the feed's own 409 of the
// last event's position is returned, with the restore's fork index and
// the new history (restored).
func (c *Client) CheckApplied(ctx context.Context, a Applied) error {
	if held, err := c.holds(ctx, a, a.Last); held || err != nil {
		return err
	}
	if err := c.restored(ctx, a); err != nil {
		return err
	}
	fork := a.Last.SeckillIndex - 1 // before the first event that differs
	// Bisect the positions: the events the feed holds come first.
	lo, hi := uint64(0), a.LastAt
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		e, _, ok, err := a.From(ctx, mid)
		if err != nil {
			return err
		}
		ours := ok && sameHistory(e.ID, a.Last.ID)
		held := true
		if ours {
			if held, err = c.holds(ctx, a, e); err != nil {
				return err
			}
		}
		if held {
			lo = mid
			if ours {
				fork = e.SeckillIndex
			}
			continue
		}
		hi = mid
		if fork >= e.SeckillIndex {
			fork = e.SeckillIndex - 1
		}
	}
	return &Error{Status: 409, Code: ErrCursorDiverged.Code, SKUID: a.SKUID, ForkIndex: fork,
		Detail: fmt.Sprintf("the feed of SKU %s holds another record at log index %d than event %s (%s) this consumer applied: "+
			"seckilld serves an older copy of its log that recorded past the consumer's cursor", a.SKUID, a.Last.SeckillIndex, a.Last.ID, a.Last.Type)}
}

// restored returns the feed's 409 CURSOR_DIVERGED of the position of
// a.Last when it names a history: a restore to an earlier point gave the
// SKU a new history after its fork index, and the feed knows that fork
// exactly, where a bisection of the events applied would name it an older
// copy without the history the operator's reanchor follows. An older copy
// keeps the history the consumer read: its feed takes the position, or
// refuses it without a history while its log is behind it; nil then.
func (c *Client) restored(ctx context.Context, a Applied) error {
	_, err := c.Feed(ctx, FeedRequest{CampaignID: a.CampaignID, SKUID: a.SKUID, After: a.Last.ID, Limit: 1})
	var e *Error
	switch {
	case errors.Is(err, ErrCursorDiverged) && errors.As(err, &e) && e.History != "":
		return err
	case err == nil, errors.Is(err, ErrCursorDiverged), errors.Is(err, ErrCursorCompacted):
		return nil
	}
	return fmt.Errorf("reading the feed of SKU %s after %s: %w", a.SKUID, a.Last.ID, err)
}

// holds reports whether the feed of a's SKU holds e: the record at e's
// index is e, field by field. A record the feed no longer holds
// (truncated) counts as held: nothing tells it apart.
func (c *Client) holds(ctx context.Context, a Applied, e Event) (bool, error) {
	history, _, _ := strings.Cut(e.ID, "-")
	after := ""
	if e.SeckillIndex > 1 {
		after = history + "-" + strconv.FormatUint(e.SeckillIndex-1, 10)
	}
	page, err := c.Feed(ctx, FeedRequest{CampaignID: a.CampaignID, SKUID: a.SKUID, After: after, Limit: 1, Types: []string{e.Type}})
	switch {
	case errors.Is(err, ErrCursorCompacted):
		return true, nil
	case errors.Is(err, ErrCursorDiverged):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading the event at log index %d of SKU %s: %w", e.SeckillIndex, a.SKUID, err)
	}
	if page.FirstIndex > e.SeckillIndex { // read from the start of the retained log, which is past it
		return true, nil
	}
	return len(page.Events) == 1 && sameEvent(page.Events[0], e), nil
}

// sameEvent compares two events field by field, their data as JSON values
// (a consumer may have stored it re-encoded, as PostgreSQL's jsonb does).
func sameEvent(a, b Event) bool {
	if a.ID != b.ID || a.Type != b.Type || a.Subject != b.Subject || a.SeckillIndex != b.SeckillIndex || !a.Time.Equal(b.Time) {
		return false
	}
	var x, y any
	if decodeNumbers(a.Data, &x) != nil || decodeNumbers(b.Data, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func decodeNumbers(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func sameHistory(a, b string) bool {
	ha, _, _ := strings.Cut(a, "-")
	hb, _, _ := strings.Cut(b, "-")
	return ha == hb
}
