package bench

import (
	"context"
	"time"
)

// Reply is what one reservation attempt produced.
type Reply struct {
	// Outcome classifies the answer.
	Outcome Outcome
	// ReservationID is set for OutcomeAccepted, and for
	// OutcomeAlreadyPurchased when the server names the existing reservation.
	ReservationID string
	// TokenID is the stock token bound to an accepted reservation; empty for
	// baselines that count rather than hand out tokens.
	TokenID string
	// ExpireAt is when an accepted reservation closes unless paid (zero when
	// the answer does not say).
	ExpireAt time.Time
	// RetryAfter is the server's Retry-After for OutcomeQueueFull (0 when absent).
	RetryAfter time.Duration
	// Detail names the cause of an OutcomeError in a few words ("timeout",
	// "status 500", ...); the tally counts errors by Detail.
	Detail string
}

// Reserver sends reservation attempts for one SKU of one campaign. The HTTP
// client, the Redis and PostgreSQL baselines and the in-process engine adapter
// all implement it, so that one driver measures them all the same way.
//
// Reserve must be safe for concurrent use. A non-nil error means the attempt
// did not get an answer (the driver counts it as OutcomeError with the error
// text as Detail); a business refusal is a Reply with a nil error.
type Reserver interface {
	Reserve(ctx context.Context, requestID, userID string) (Reply, error)
}

// ReserverFunc adapts a function to the Reserver interface.
type ReserverFunc func(ctx context.Context, requestID, userID string) (Reply, error)

// Reserve calls f.
func (f ReserverFunc) Reserve(ctx context.Context, requestID, userID string) (Reply, error) {
	return f(ctx, requestID, userID)
}
