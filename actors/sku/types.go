package sku

import "fmt"

// State is the state of a reservation. The allowed edges are
//
//	PENDING_PAYMENT -> PAID      (a payment before expire_at)
//	PENDING_PAYMENT -> CLOSED    (cancel, or expiry at or after expire_at)
//
// PAID and CLOSED are final: a payment that arrives after close leaves the
// reservation CLOSED and is recorded as needing a refund.
type State uint8

// Reservation states. The numbers are part of the log and snapshot formats.
const (
	StatePendingPayment State = 1
	StatePaid           State = 2
	StateClosed         State = 3
)

var stateNames = [...]string{"", "PENDING_PAYMENT", "PAID", "CLOSED"}

func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// canMove reports whether from -> to is an edge of the state machine.
func canMove(from, to State) bool {
	return from == StatePendingPayment && (to == StatePaid || to == StateClosed)
}

// CloseReason says why a reservation was closed.
type CloseReason uint8

// Close reasons. The numbers are part of the log and snapshot formats.
const (
	ReasonNone      CloseReason = 0
	ReasonExpired   CloseReason = 1 // expire_at passed without a payment
	ReasonCancelled CloseReason = 2 // the buyer or an operator cancelled it
)

func (r CloseReason) String() string {
	switch r {
	case ReasonExpired:
		return "EXPIRED"
	case ReasonCancelled:
		return "CANCELLED"
	case ReasonNone:
		return ""
	}
	return fmt.Sprintf("CloseReason(%d)", uint8(r))
}

// Outcome is the answer to a command. Its String form is the machine-readable
// reason the HTTP API sends (e.g. "SOLD_OUT").
type Outcome uint8

// Outcomes. The numbers are part of the log format (rejections are recorded).
const (
	OutcomeNone             Outcome = 0
	OutcomeAccepted         Outcome = 1  // reserve: a token is bound to a new reservation
	OutcomeSoldOut          Outcome = 2  // reserve: no token available
	OutcomeAlreadyPurchased Outcome = 3  // reserve: the user has a live purchase on this SKU
	OutcomeRequestIDReused  Outcome = 4  // reserve: same request_id with other parameters
	OutcomeNotStarted       Outcome = 5  // reserve: before start_at
	OutcomeEnded            Outcome = 6  // reserve: at or after end_at
	OutcomePaused           Outcome = 7  // reserve: the SKU is paused
	OutcomePaid             Outcome = 8  // pay: PENDING_PAYMENT -> PAID
	OutcomeAlreadyPaid      Outcome = 9  // pay: repeat of the payment that paid it
	OutcomePaymentConflict  Outcome = 10 // pay: another payment_id on a paid reservation
	OutcomeRefundRequired   Outcome = 11 // pay: closed or expired; the payment is recorded for refund
	OutcomeNotFound         Outcome = 12 // no such reservation
	OutcomeClosed           Outcome = 13 // close: PENDING_PAYMENT -> CLOSED
	OutcomeAlreadyClosed    Outcome = 14 // close: it was closed before
	OutcomeNotClosable      Outcome = 15 // close or release: it is paid
	OutcomeNotExpired       Outcome = 16 // close(EXPIRED) before expire_at: nothing changes
	OutcomeReleased         Outcome = 17 // release: the token went back to the pool
	OutcomeAlreadyReleased  Outcome = 18 // release: the reservation holds no token any more
	OutcomeNotClosed        Outcome = 19 // release: the reservation is still PENDING_PAYMENT
	OutcomeOK               Outcome = 20 // pause, resume, define: applied or already so
	OutcomeInvalid          Outcome = 21 // a malformed id, or a definition change that is not allowed
	OutcomeSubjectLimit     Outcome = 22 // reserve, enter: a subject key of the pass is at max_unpaid_per_subject (on a lottery: entries); not recorded
	// Lottery outcomes (lottery_commands.go).
	OutcomeLotterySale    Outcome = 23 // reserve on a lottery SKU: enter instead
	OutcomeEntered        Outcome = 24 // enter: the entry is recorded
	OutcomeEntriesNotOpen Outcome = 25 // enter: before entries_open_at
	OutcomeEntriesClosed  Outcome = 26 // enter: at or after entries_close_at
	OutcomeNotLottery     Outcome = 27 // enter, draw: the SKU is not a lottery
	OutcomeDrawStarted    Outcome = 28 // draw: the draw inputs are recorded
	OutcomeEntriesOpen    Outcome = 29 // draw: entries are still open
	OutcomeBeaconNotDue   Outcome = 30 // draw: before the beacon round's time
	OutcomeAlreadyDrawn   Outcome = 31 // draw: a draw was recorded before
	OutcomeWrongRound     Outcome = 32 // draw: neither the named round nor its fallback

	// OutcomeAlreadyEntered: reserve or enter on a SKU of a campaign whose
	// purchase_limit is "campaign", by a user whose lottery entry on
	// another SKU of the campaign may still win; not recorded.
	OutcomeAlreadyEntered Outcome = 33

	// OutcomePaymentIDReused: pay with a payment_id already recorded on
	// the reservation (its payment, or one recorded for refund) but
	// another amount: an idempotency key reused for another payment;
	// nothing is recorded.
	OutcomePaymentIDReused Outcome = 34
)

var outcomeNames = [...]string{
	"NONE", "ACCEPTED", "SOLD_OUT", "ALREADY_PURCHASED", "REQUEST_ID_REUSED",
	"NOT_STARTED", "ENDED", "PAUSED", "PAID", "ALREADY_PAID", "PAYMENT_CONFLICT",
	"REFUND_REQUIRED", "NOT_FOUND", "CLOSED", "ALREADY_CLOSED", "NOT_CLOSABLE",
	"NOT_EXPIRED", "RELEASED", "ALREADY_RELEASED", "NOT_CLOSED", "OK", "INVALID",
	"SUBJECT_LIMIT",
	"LOTTERY_SALE", "ENTERED", "ENTRIES_NOT_OPEN", "ENTRIES_CLOSED", "NOT_LOTTERY",
	"DRAW_STARTED", "ENTRIES_OPEN", "BEACON_NOT_DUE", "ALREADY_DRAWN", "WRONG_ROUND",
	"ALREADY_ENTERED", "PAYMENT_ID_REUSED",
}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// View is a copy of one reservation, safe to hand to other goroutines.
// Times are Unix milliseconds; zero means "not set".
type View struct {
	ReservationID  string
	RequestID      string
	UserID         string
	TokenID        uint32 // 1..sale_limit
	State          State
	CloseReason    CloseReason
	CreatedAt      int64 // ms
	ExpireAt       int64 // ms; a payment at or after it is too late
	PaidAt         int64 // ms
	ClosedAt       int64 // ms
	PaymentID      string
	Amount         int64 // minor currency units, as the payment reported it
	Version        uint32
	HoldsToken     bool     // the token is still bound to this reservation
	RefundRequired bool     // a payment arrived after close
	RefundPayments []string // payment ids that need a refund
}

// Result is the answer to one command.
//
// Duplicate is set when a reserve repeats a request_id already decided: the
// Outcome and Reservation are then those of the original decision (the
// DUPLICATE case of the API, answered with the original result).
type Result struct {
	Outcome     Outcome
	Duplicate   bool
	Reservation View // set for ACCEPTED, ALREADY_PURCHASED (the existing one) and every reservation command
	// Entered is set for ALREADY_ENTERED: the SKU and request_id of the
	// user's lottery entry that may still win (purchase_limit "campaign").
	Entered EntryRef
}

// EntryRef names a lottery entry: its campaign, SKU and request_id.
type EntryRef struct {
	CampaignID, SKUID, RequestID string
}
