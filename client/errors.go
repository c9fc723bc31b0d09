package client

import (
	"fmt"
	"time"
)

// Error is an answer of the server that is not a success: its status and
// its machine-readable reason (the "error" field of the body).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the reason: SOLD_OUT, ALREADY_PURCHASED, QUEUE_FULL, ...
	Code string `json:"error"`
	// Detail is the server's explanation, when it gave one.
	Detail string `json:"detail,omitempty"`
	// ReservationID names the user's existing reservation
	// (ALREADY_PURCHASED) or the one a 504 is about.
	ReservationID string `json:"reservation_id,omitempty"`
	// SKUID is the SKU of ReservationID (ALREADY_PURCHASED, ALREADY_ENTERED).
	SKUID string `json:"sku_id,omitempty"`
	// StatusURL is where to read what became of the call (504, ALREADY_ENTERED).
	StatusURL string `json:"status_url,omitempty"`
	// FirstIndex is the oldest log index the feed still holds
	// (410 CURSOR_COMPACTED).
	FirstIndex uint64 `json:"first_index,omitempty"`
	// ForkIndex is where a restored SKU's log left the cursor's history
	// (409 CURSOR_DIVERGED), and History the log's history since.
	ForkIndex uint64 `json:"fork_index,omitempty"`
	History   string `json:"history,omitempty"`
	// RetryAfter is the server's Retry-After (0 when absent).
	RetryAfter time.Duration `json:"-"`
}

// Error returns "seckill: status CODE: detail (reservation ID)". A status
// without a JSON error body has its status text as Code and the body,
// trimmed to 200 bytes, as Detail.
func (e *Error) Error() string {
	s := fmt.Sprintf("seckill: %d %s", e.Status, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.ReservationID != "" {
		s += " (reservation " + e.ReservationID + ")"
	}
	return s
}

// Is matches another *Error by its Code (and its Status when the target
// sets one), so errors.Is(err, client.ErrSoldOut) reads as it says.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

// The reasons a caller usually branches on (match with errors.Is).
// docs/api.md's outcomes and errors list every one.
var (
	ErrSoldOut           = &Error{Code: "SOLD_OUT"}
	ErrAlreadyPurchased  = &Error{Code: "ALREADY_PURCHASED"}
	ErrAlreadyEntered    = &Error{Code: "ALREADY_ENTERED"}
	ErrRequestIDReused   = &Error{Code: "REQUEST_ID_REUSED"}
	ErrNotStarted        = &Error{Code: "NOT_STARTED"}
	ErrEnded             = &Error{Code: "ENDED"}
	ErrPaused            = &Error{Code: "PAUSED"}
	ErrQueueFull         = &Error{Code: "QUEUE_FULL"}
	ErrThrottled         = &Error{Code: "THROTTLED"} // 429: the SKU's commits are too slow for the buyer's wait
	ErrUnavailable       = &Error{Code: "UNAVAILABLE"}
	ErrResultUnknown     = &Error{Code: "RESULT_UNKNOWN"}
	ErrNotFound          = &Error{Code: "NOT_FOUND"}
	ErrRefundRequired    = &Error{Code: "REFUND_REQUIRED"}
	ErrPaymentConflict   = &Error{Code: "PAYMENT_CONFLICT"}
	ErrPaymentIDReused   = &Error{Code: "PAYMENT_ID_REUSED"} // 422: a payment_id already recorded with another amount
	ErrNotClosable       = &Error{Code: "NOT_CLOSABLE"}
	ErrWrongCell         = &Error{Code: "WRONG_CELL"}
	ErrCursorCompacted   = &Error{Code: "CURSOR_COMPACTED"}
	ErrCursorDiverged    = &Error{Code: "CURSOR_DIVERGED"}
	ErrUnauthorized      = &Error{Code: "UNAUTHORIZED"}
	ErrEntryPassRequired = &Error{Code: "ENTRY_PASS_REQUIRED"}
	ErrEntryPassInvalid  = &Error{Code: "ENTRY_PASS_INVALID"}
	ErrEntryPassExpired  = &Error{Code: "ENTRY_PASS_EXPIRED"}
	ErrSubjectLimit      = &Error{Code: "SUBJECT_LIMIT"}
	ErrBadRequest        = &Error{Code: "BAD_REQUEST"}
)

// retryable reports whether the same call may be sent again after e, once
// its Retry-After has passed: the server decided nothing (429, 503), or it
// does not know (504, resolved first where the call has a status to read;
// 502, a proxy's). Every call this package sends is idempotent (a reserve
// by its request_id, a payment by its payment_id), so a resend never
// makes a second effect.
func (e *Error) retryable() bool {
	return e.Status == 429 || e.Status == 502 || e.Status == 503 || e.Status == 504
}
