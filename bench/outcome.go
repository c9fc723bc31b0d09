package bench

import "strings"

// Outcome classifies one answer to a reservation attempt, following the HTTP
// contract of seckilld (status code plus the "error" field of the body).
type Outcome uint8

// The outcomes, in the order they are printed.
const (
	// OutcomeAccepted is a 202: a unit is reserved for the request.
	OutcomeAccepted Outcome = iota
	// OutcomeSoldOut is 409 SOLD_OUT.
	OutcomeSoldOut
	// OutcomeAlreadyPurchased is 409 ALREADY_PURCHASED: the user already holds a unit.
	OutcomeAlreadyPurchased
	// OutcomeRequestIDReused is 422 REQUEST_ID_REUSED: same request_id, other parameters.
	OutcomeRequestIDReused
	// OutcomeQueueFull is a 429 (QUEUE_FULL, or THROTTLED while the SKU's log commits
	// too slowly): admission refused for now, retry after Retry-After.
	OutcomeQueueFull
	// OutcomeNotStarted is 403 NOT_STARTED.
	OutcomeNotStarted
	// OutcomeEnded is 403 ENDED.
	OutcomeEnded
	// OutcomePaused is 503 PAUSED.
	OutcomePaused
	// OutcomeUnavailable is 503 UNAVAILABLE (or any other 503).
	OutcomeUnavailable
	// OutcomeResultUnknown is 504 RESULT_UNKNOWN: the server does not know yet; ask again.
	OutcomeResultUnknown
	// OutcomeBadRequest is a 400.
	OutcomeBadRequest
	// OutcomeError is a transport failure or an answer outside the contract.
	OutcomeError

	// OutcomeCount is the number of outcomes; not an outcome itself.
	OutcomeCount
)

var outcomeNames = [OutcomeCount]string{
	OutcomeAccepted:         "accepted",
	OutcomeSoldOut:          "sold_out",
	OutcomeAlreadyPurchased: "already_purchased",
	OutcomeRequestIDReused:  "request_id_reused",
	OutcomeQueueFull:        "queue_full",
	OutcomeNotStarted:       "not_started",
	OutcomeEnded:            "ended",
	OutcomePaused:           "paused",
	OutcomeUnavailable:      "unavailable",
	OutcomeResultUnknown:    "result_unknown",
	OutcomeBadRequest:       "bad_request",
	OutcomeError:            "error",
}

// String returns the snake_case name used in JSON and in the summary.
func (o Outcome) String() string {
	if o < OutcomeCount {
		return outcomeNames[o]
	}
	return "invalid"
}

// Definitive reports whether the outcome is a final business answer for the
// request: resending the same request_id must give the same answer.
func (o Outcome) Definitive() bool {
	switch o {
	case OutcomeAccepted, OutcomeSoldOut, OutcomeAlreadyPurchased, OutcomeRequestIDReused:
		return true
	}
	return false
}

// Transient reports whether resending the same request_id later may change
// the answer (queue full, result unknown, unavailable, transport error).
func (o Outcome) Transient() bool {
	switch o {
	case OutcomeQueueFull, OutcomeResultUnknown, OutcomeUnavailable, OutcomeError:
		return true
	}
	return false
}

// ClassifyReserve maps a reservation answer (HTTP status and the "error" code
// of its body) to an Outcome.
func ClassifyReserve(status int, code string) Outcome {
	code = strings.ToUpper(code)
	switch status {
	case 202:
		return OutcomeAccepted
	case 400:
		return OutcomeBadRequest
	case 403:
		switch code {
		case "NOT_STARTED":
			return OutcomeNotStarted
		case "ENDED":
			return OutcomeEnded
		}
	case 409:
		switch code {
		case "SOLD_OUT":
			return OutcomeSoldOut
		case "ALREADY_PURCHASED":
			return OutcomeAlreadyPurchased
		}
	case 422:
		if code == "REQUEST_ID_REUSED" {
			return OutcomeRequestIDReused
		}
	case 429:
		return OutcomeQueueFull
	case 503:
		if code == "PAUSED" {
			return OutcomePaused
		}
		return OutcomeUnavailable
	case 504:
		return OutcomeResultUnknown
	}
	return OutcomeError
}
