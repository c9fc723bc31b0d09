package httpapi

import (
	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// statuses is the one table of the HTTP status of every reason the server
// answers, on every route, single and batch: the "error" of each refusal
// (httpapi's reason constants and the engine's sku.Outcome names) and the
// outcome of each command the engine decided (ACCEPTED, PAID, ...). A
// reason means one thing and has one status wherever it is answered; a
// route chooses the reason and the body, never the status. What is not
// here is no reason: the labels of reads (a reservation's state, a SKU's
// status, "degraded") and OK, the success of a read or an admin command
// (200, or 201 for a campaign PUT that created the campaign).
// TestStatusTable walks it against the reasons and docs/api.md's Errors.
var statuses = map[string]int{
	// The engine decided the command.
	sku.OutcomeAccepted.String():        fasthttp.StatusAccepted,
	sku.OutcomeEntered.String():         fasthttp.StatusAccepted,
	sku.OutcomeDrawStarted.String():     fasthttp.StatusAccepted,
	sku.OutcomePaid.String():            fasthttp.StatusOK,
	sku.OutcomeAlreadyPaid.String():     fasthttp.StatusOK,
	sku.OutcomeClosed.String():          fasthttp.StatusOK,
	sku.OutcomeAlreadyClosed.String():   fasthttp.StatusOK,
	sku.OutcomeReleased.String():        fasthttp.StatusOK,
	sku.OutcomeAlreadyReleased.String(): fasthttp.StatusOK,

	// The request is not one the route takes.
	reasonBadRequest:               fasthttp.StatusBadRequest,
	reasonInvalidJSON:              fasthttp.StatusBadRequest,
	reasonReservationMismatch:      fasthttp.StatusBadRequest,
	reasonEntryPassMismatch:        fasthttp.StatusBadRequest,
	reasonBadCursor:                fasthttp.StatusBadRequest,
	reasonCampaignFeedTooWide:      fasthttp.StatusBadRequest,
	reasonBadBeacon:                fasthttp.StatusBadRequest,
	sku.OutcomeWrongRound.String(): fasthttp.StatusBadRequest,
	reasonUnauthorized:             fasthttp.StatusUnauthorized,
	reasonNotFound:                 fasthttp.StatusNotFound,
	ReasonNotCelled:                fasthttp.StatusNotFound,
	reasonMethodNotAllowed:         fasthttp.StatusMethodNotAllowed,
	reasonRequestTimeout:           fasthttp.StatusRequestTimeout,
	reasonBodyTooLarge:             fasthttp.StatusRequestEntityTooLarge,
	reasonHeaderTooLarge:           fasthttp.StatusRequestHeaderFieldsTooLarge,
	reasonNotImplemented:           fasthttp.StatusNotImplemented,

	// Forbidden: outside a window of the sale (on every route: a reserve,
	// an entry, a draw, an entry pass issued), or a credential that does
	// not admit the request.
	reasonNotStarted:                   fasthttp.StatusForbidden,
	reasonEnded:                        fasthttp.StatusForbidden,
	reasonEntryPassRequired:            fasthttp.StatusForbidden,
	reasonEntryPassInvalid:             fasthttp.StatusForbidden,
	reasonEntryPassExpired:             fasthttp.StatusForbidden,
	sku.OutcomeEntriesNotOpen.String(): fasthttp.StatusForbidden,
	sku.OutcomeEntriesClosed.String():  fasthttp.StatusForbidden,
	reasonLoginLinkInvalid:             fasthttp.StatusForbidden,

	// Refused here: the request must go elsewhere or change.
	reasonWrongCell:                     fasthttp.StatusMisdirectedRequest,
	reasonNotPrimary:                    fasthttp.StatusMisdirectedRequest,
	sku.OutcomeRequestIDReused.String(): fasthttp.StatusUnprocessableEntity,
	sku.OutcomePaymentIDReused.String(): fasthttp.StatusUnprocessableEntity,
	reasonCursorCompacted:               fasthttp.StatusGone,
	reasonTooManySKUs:                   fasthttp.StatusInsufficientStorage,

	// The state of the SKU, the reservation or the campaign refuses it.
	reasonSoldOut:                        fasthttp.StatusConflict,
	sku.OutcomeAlreadyPurchased.String(): fasthttp.StatusConflict,
	sku.OutcomeAlreadyEntered.String():   fasthttp.StatusConflict,
	sku.OutcomeSubjectLimit.String():     fasthttp.StatusConflict,
	reasonLotterySale:                    fasthttp.StatusConflict,
	sku.OutcomeNotLottery.String():       fasthttp.StatusConflict,
	sku.OutcomeRefundRequired.String():   fasthttp.StatusConflict,
	sku.OutcomePaymentConflict.String():  fasthttp.StatusConflict,
	sku.OutcomeNotClosable.String():      fasthttp.StatusConflict,
	sku.OutcomeNotClosed.String():        fasthttp.StatusConflict,
	sku.OutcomeEntriesOpen.String():      fasthttp.StatusConflict,
	sku.OutcomeBeaconNotDue.String():     fasthttp.StatusConflict,
	sku.OutcomeAlreadyDrawn.String():     fasthttp.StatusConflict,
	reasonDefinitionConflict:             fasthttp.StatusConflict,
	reasonCursorDiverged:                 fasthttp.StatusConflict,
	reasonCampaignPublished:              fasthttp.StatusConflict,
	reasonCampaignOnOtherCell:            fasthttp.StatusConflict,

	// Not now: a retry may succeed (Retry-After where the server knows).
	reasonQueueFull:         fasthttp.StatusTooManyRequests,
	reasonThrottled:         fasthttp.StatusTooManyRequests,
	reasonPaused:            fasthttp.StatusServiceUnavailable,
	ReasonUnavailable:       fasthttp.StatusServiceUnavailable,
	reasonReadTimeout:       fasthttp.StatusServiceUnavailable,
	reasonAuditPending:      fasthttp.StatusServiceUnavailable,
	reasonLedgerUnreachable: fasthttp.StatusServiceUnavailable,
	ReasonCellUnavailable:   fasthttp.StatusServiceUnavailable,
	ReasonResultUnknown:     fasthttp.StatusGatewayTimeout,
	reasonInternal:          fasthttp.StatusInternalServerError,
}

// StatusOf is the status of reason, for this package and for the other
// answerers of the API's reasons (seckill-router, the cells' batch split).
// A reason missing from the table would be a bug (TestStatusTable): it is
// answered 500.
func StatusOf(reason string) int {
	if status, ok := statuses[reason]; ok {
		return status
	}
	return fasthttp.StatusInternalServerError
}

// retryAfters is the one table of the Retry-After of each 503 reason:
// every one of them means "nothing was done, try again later", so its
// answer says when, on every route, the admin routes' and /readyz's
// included (reasonReply). A pause lasts until an operator resumes (5 s spreads the
// retries of a crowd); the others end within about a second: a SKU
// recovers its log after a backoff that starts at 1 s, a read or a recount
// goes on, a replica set's primary or a cell's ledger answers again.
// TestEvery503CarriesRetryAfter holds it to the status table.
var retryAfters = map[string]string{
	reasonPaused:            "5",
	ReasonUnavailable:       "1",
	reasonReadTimeout:       "1",
	reasonAuditPending:      "1",
	reasonLedgerUnreachable: "1",
	ReasonCellUnavailable:   "1",
}

// RetryAfterOf is the Retry-After (seconds) of reason's answers, "" for a
// reason that sets none of its own: for this package and for the other
// answerers of the API's 503s (seckill-router, the cells' batch split).
func RetryAfterOf(reason string) string {
	return retryAfters[reason]
}

// reasonReply encodes v as the answer of reason, with its status and its
// Retry-After (RetryAfterOf): a 503 says when to come back whatever its
// body, /readyz's "starting" and "draining" included.
func reasonReply(reason string, v any) reply {
	r := jsonReply(StatusOf(reason), reason, v)
	r.retryAfter = RetryAfterOf(reason)
	return r
}

// errorReply is the error answer of reason: reasonReply with a body of the
// reason and detail (omitted when "").
func errorReply(reason, detail string) reply {
	return reasonReply(reason, errorBody{Error: reason, Detail: detail})
}
