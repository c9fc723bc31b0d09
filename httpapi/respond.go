package httpapi

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// Reasons the service itself gives in the "error" field. The reasons the
// engine gives are sku.Outcome names (SOLD_OUT, ALREADY_PURCHASED, ...).
const (
	reasonBadRequest = "BAD_REQUEST"
	// reasonInvalidJSON: the body is not one complete JSON text (empty,
	// cut short, not JSON, more after its value); a JSON body that is not
	// what the route takes is BAD_REQUEST (decode.go).
	reasonInvalidJSON        = "INVALID_JSON"
	reasonBodyTooLarge       = "BODY_TOO_LARGE"
	reasonHeaderTooLarge     = "HEADER_TOO_LARGE"
	reasonRequestTimeout     = "REQUEST_TIMEOUT"
	reasonNotImplemented     = "NOT_IMPLEMENTED"
	reasonNotFound           = "NOT_FOUND"
	reasonMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	reasonUnauthorized       = "UNAUTHORIZED"
	reasonQueueFull          = "QUEUE_FULL"
	reasonThrottled          = "THROTTLED"
	ReasonUnavailable        = "UNAVAILABLE"
	reasonInternal           = "INTERNAL"
	reasonDefinitionConflict = "DEFINITION_CONFLICT"
	reasonSoldOut            = "SOLD_OUT"
	reasonNotStarted         = "NOT_STARTED"
	reasonEnded              = "ENDED"
	reasonPaused             = "PAUSED"
	// reasonReservationMismatch: a payment body's reservation_id names
	// another reservation than the path.
	reasonReservationMismatch = "RESERVATION_MISMATCH"
	// reasonTooManySKUs: defining the campaign would take the engine
	// beyond its limit of SKUs (507: a capacity of this server, see
	// handleDefine).
	reasonTooManySKUs = "TOO_MANY_SKUS"
	// reasonReadTimeout: a read (a reservation, a request lookup, refunds)
	// did not get its answer in time; it changed nothing (503, Retry-After).
	reasonReadTimeout = "READ_TIMEOUT"
	// reasonAuditPending: the SKU's recount outlasted the request; it goes
	// on, and a retry gets its result (503, Retry-After).
	reasonAuditPending = "AUDIT_PENDING"
)

// ReasonResultUnknown: the command may or may not have been applied (504,
// with a status_url): answered by this server, by seckill-router and by
// the cells' batch split for a request a cell did not answer.
const ReasonResultUnknown = "RESULT_UNKNOWN"

// outcomeOK labels a successful answer that carries no other reason.
const outcomeOK = "OK"

// errorBody is the body of every error answer.
type errorBody struct {
	Error         string `json:"error"`
	Detail        string `json:"detail,omitempty"`
	ReservationID string `json:"reservation_id,omitempty"`
	// SKUID is the SKU of ReservationID for ALREADY_PURCHASED (in a
	// campaign whose purchase_limit is "campaign" it may be another SKU
	// than the one asked).
	SKUID     string `json:"sku_id,omitempty"`
	StatusURL string `json:"status_url,omitempty"`
	// ExpiredAt is when an entry pass expired (ENTRY_PASS_EXPIRED).
	ExpiredAt string `json:"expired_at,omitempty"`
	// Cell and Address are, for WRONG_CELL, the cell that owns the user
	// and its HTTP base URL (when the answering cell knows it); Primary
	// and Address, for NOT_PRIMARY, the replica set's primary and its
	// base URL (replica.go).
	Cell       string `json:"cell,omitempty"`
	Primary    string `json:"primary,omitempty"`
	Address    string `json:"address,omitempty"`
	ReplicaSet string `json:"replica_set,omitempty"`
}

// reply is an encoded answer. Replies kept in the dedup cache are shared
// between requests and never modified.
type reply struct {
	status   int
	body     []byte
	location string // Location header, if any
	// reservation, when set, makes the Location header its status URL
	// (ReservationURL), written without making that string: an accepted
	// reserve's answer.
	reservation string
	// accepted, for an accepted reserve, is its body's other values
	// (reservation is its reservation_id): the body is encoded where it is
	// written (appendBody), not into an allocation of its own per sale.
	accepted   acceptedAnswer
	retryAfter string // Retry-After header (seconds), if any
	outcome    string // metric label: the reason or the state
}

// appendBody appends r's body: its encoding of an accepted reserve, or
// body.
func (r *reply) appendBody(dst []byte) []byte {
	if r.accepted.requestID != "" {
		return appendAccepted(dst, r.reservation, &r.accepted)
	}
	return append(dst, r.body...)
}

// jsonReply encodes v as the body of a reply.
func jsonReply(status int, outcome string, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain structs are encoded here; failure means a value the
		// engine handed over (a snapshot description) does not encode.
		return reply{status: StatusOf(reasonInternal), body: []byte(`{"error":"INTERNAL","detail":"unencodable answer"}`), outcome: reasonInternal}
	}
	return reply{status: status, body: b, outcome: outcome}
}

// write sends r on ctx. The body is copied by fasthttp (SetBody), so a
// shared reply stays untouched.
func write(ctx *fasthttp.RequestCtx, r reply) string {
	ctx.SetStatusCode(r.status)
	ctx.SetContentType("application/json")
	switch {
	case r.location != "":
		setLocation(ctx, r.location, "")
	case r.reservation != "":
		setLocation(ctx, reservationURLPrefix, r.reservation)
	}
	if r.retryAfter != "" {
		ctx.Response.Header.Set("Retry-After", r.retryAfter)
	}
	if r.accepted.requestID != "" {
		var buf [acceptedTypicalLen]byte // fasthttp copies the body
		ctx.SetBody(r.appendBody(buf[:0]))
		return r.outcome
	}
	ctx.SetBody(r.body)
	return r.outcome
}

// headerLocation is the Location header's name in fasthttp's canonical
// form: SetCanonical skips normalizing it on every answer.
var headerLocation = []byte("Location")

// setLocation sets the Location header to prefix+rest, joined in a buffer
// on the stack (fasthttp copies the value).
func setLocation(ctx *fasthttp.RequestCtx, prefix, rest string) {
	var buf [192]byte
	ctx.Response.Header.SetCanonical(headerLocation, append(append(buf[:0], prefix...), rest...))
}

// retryAfterSeconds renders d as a Retry-After value: whole seconds, at
// least 1. Up to a minute it allocates nothing (a crowd refused THROTTLED
// gets one each).
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	if s < int64(len(smallSeconds)) {
		return smallSeconds[s]
	}
	return strconv.FormatInt(s, 10)
}

// smallSeconds are the decimal renderings of 0 to 60.
var smallSeconds = func() (t [61]string) {
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()
