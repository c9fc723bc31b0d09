package feed

import (
	"errors"
	"fmt"
)

// Errors of opening and reading a feed. The ones a consumer can act on are
// types that carry what it needs; the HTTP service answers each with its
// status and reason. Any other error is the server's (a log or history file
// that cannot be read, an event that does not encode).
var (
	// ErrUnknownSKU: the engine does not know the SKU.
	ErrUnknownSKU = errors.New("unknown SKU")
	// ErrUnknownCampaign: the campaign has no SKU.
	ErrUnknownCampaign = errors.New("unknown campaign")
	// ErrNotOpen: the SKU's log is not open (it is recovering); retry.
	ErrNotOpen = errors.New("the SKU's log is not open (recovering)")
	// ErrLogClosed: the SKU's log closed (it failed and is recovering, or
	// the engine is closing) while it was read; retry.
	ErrLogClosed = errors.New("the SKU's log closed; retry")
)

// BadCursorError is a cursor that is malformed, or none of the SKU's (or
// campaign's).
type BadCursorError struct {
	Detail string
}

func (e *BadCursorError) Error() string { return e.Detail }

// CompactedError is a cursor before the records the SKU's log still holds:
// they were removed after a snapshot. The consumer resynchronises from the
// export (Feed.Export) and continues after its next cursor.
type CompactedError struct {
	CampaignID, SKUID string
	// FirstIndex is the log's first record now.
	FirstIndex uint64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("records of %s/%s before %d were removed after a snapshot", e.CampaignID, e.SKUID, e.FirstIndex)
}

// DivergedError is a cursor past the point where the log's history and the
// cursor's part (ErrDiverged): the log was restored to an earlier point
// (ForkIndex, History: the history after it), or the cursor is beyond the
// log's durable index (BeyondDurable; ForkIndex is the durable index),
// this log being an older copy. The consumer resynchronises from the
// export and continues after ForkIndex. An older copy keeps the history of
// the cursors it refuses, so only while its log is behind them can they be
// told apart: its message asks for the new history that tells them apart
// for good.
type DivergedError struct {
	SKUID         string
	ForkIndex     uint64
	History       string
	BeyondDurable bool
}

func (e *DivergedError) Error() string {
	if e.BeyondDurable {
		return fmt.Sprintf("the cursor is beyond the log's durable index %d: this log is an older copy; "+
			"pause its SKU and give it a new history (seckillctl restore --until-index %d) before it records "+
			"past the cursor: from there its feed can no longer tell its new records from those the cursor saw", e.ForkIndex, e.ForkIndex)
	}
	return fmt.Sprintf("the log was restored to an earlier point: the cursor's history left it after %d", e.ForkIndex)
}

// Is makes errors.Is(err, ErrDiverged) hold.
func (e *DivergedError) Is(target error) bool { return target == ErrDiverged }

// TooWideError is a campaign with more SKUs than CampaignFeedMaxSKUs (or a
// cursor wider than CampaignCursorMaxBytes): its feed's cursor would not
// fit a request. Its SKUs' feeds are read one by one.
type TooWideError struct {
	CampaignID string
	SKUs       int
}

func (e *TooWideError) Error() string {
	return fmt.Sprintf("campaign %s has %d SKUs: its feed's cursor would exceed %d bytes (at most %d SKUs)",
		e.CampaignID, e.SKUs, CampaignCursorMaxBytes, CampaignFeedMaxSKUs)
}

// LookupError is the engine's error looking up the reservations of a
// page's events (Source.Reservations).
type LookupError struct{ Err error }

func (e *LookupError) Error() string { return "looking up the page's reservations: " + e.Err.Error() }
func (e *LookupError) Unwrap() error { return e.Err }

// StateError is the engine's error rebuilding a SKU's state for an export
// (Source.DurableState).
type StateError struct{ Err error }

func (e *StateError) Error() string { return "rebuilding the SKU's state: " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }
