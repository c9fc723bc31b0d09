package httpapi

import (
	"errors"
	"strconv"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi/jsonkeys"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/valyala/fastjson"
)

// The reserve route is the flood path: its body is parsed with fastjson
// (no reflection, a pooled parser) and its 202 answer is built by
// appending, since every value in it is an id of the restricted alphabet
// (sku.ValidID), a number or a timestamp, none of which JSON escapes.
// Other routes use encoding/json, with the same key rules (decodeJSON).

var reserveParsers fastjson.ParserPool

// parseReserveBody decodes {"request_id": string, "user_id": string,
// "entry_pass": string} with p (from reserveParsers).
// Keys match exactly (no case folding); an unknown or repeated key, a
// value that is not a string, a body that is not one object, data after
// it, or a missing user_id or request_id (which an entry pass gives when
// the body leaves it out) is an error, in decodeJSON's terms (bodyError
// answers it). The ids are copies; the entry pass is a view into p's
// buffer, valid until p parses again or goes back to the pool: the pass
// is only verified, and the text of a pass (up to 332 characters) is not
// worth a copy.
func parseReserveBody(p *fastjson.Parser, body []byte) (reserveRequest, error) {
	var req reserveRequest
	if len(body) == 0 {
		return req, errEmptyBody
	}
	v, err := p.ParseBytes(body)
	if err != nil {
		return req, fastjsonError(body)
	}
	obj, err := v.Object()
	if err != nil {
		return req, errNotObject
	}
	var seenRequest, seenUser, seenPass bool
	obj.Visit(func(key []byte, val *fastjson.Value) {
		if err != nil {
			return
		}
		var dst *string
		var seen *bool
		switch string(key) {
		case "request_id":
			dst, seen = &req.RequestID, &seenRequest
		case "user_id":
			dst, seen = &req.UserID, &seenUser
		case "entry_pass":
			seen = &seenPass
		default:
			err = errors.New(keyDetail(&jsonkeys.Error{Key: string(key)}))
			return
		}
		if *seen {
			err = errors.New(keyDetail(&jsonkeys.Error{Key: string(key), Repeated: true}))
			return
		}
		*seen = true
		s, e := val.StringBytes()
		if e != nil {
			err = &fieldError{field: string(key), want: "a string"}
			return
		}
		if dst == nil {
			req.EntryPass = s
			return
		}
		*dst = string(s)
	})
	switch {
	case err != nil:
	case !seenRequest && len(req.EntryPass) == 0:
		err = missingField("request_id")
	case !seenUser:
		err = missingField("user_id")
	}
	return req, err
}

// acceptedState is the state every 202 body gives: the acceptance's.
var acceptedState = sku.StatePendingPayment.String()

// acceptedAnswer is what the 202 body of an accepted reserve says beside
// its reservation_id: the reservation's request_id (the engine's copy,
// which outlives the request), token and expire_at (Unix ms).
type acceptedAnswer struct {
	requestID string
	tokenID   uint32
	expireAt  int64
}

// acceptedTypicalLen holds the 202 body of ids of up to about 20
// characters, on the stack of write (which the runtime zeroes: the
// longest body, of 64-character ids, would take 700 bytes); a longer one
// grows onto the heap.
const acceptedTypicalLen = 320

// expireAtSeconds renders the 202 bodies' expire_at: a crowd's share
// their second (timefmt.Seconds).
var expireAtSeconds timefmt.Seconds

// appendAccepted appends the 202 body of reservation reservationID: its
// state PENDING_PAYMENT and its status_url ReservationURL(reservationID).
// The ids are the engine's: a reservation id and a request_id of
// sku.ValidID's alphabet and the reservation id's separator, none of
// which JSON escapes, so they are appended as they are; the output equals
// json.Marshal of the same acceptedBody (TestAcceptedJSONMatchesEncodingJSON).
func appendAccepted(dst []byte, reservationID string, a *acceptedAnswer) []byte {
	dst = append(dst, `{"reservation_id":"`...)
	dst = append(dst, reservationID...)
	dst = append(dst, `","request_id":"`...)
	dst = append(dst, a.requestID...)
	dst = append(dst, `","state":"`...)
	dst = append(dst, acceptedState...)
	dst = append(dst, `","token_id":`...)
	dst = strconv.AppendUint(dst, uint64(a.tokenID), 10)
	dst = append(dst, `,"expire_at":"`...)
	dst = expireAtSeconds.AppendMillis(dst, a.expireAt)
	dst = append(dst, `","status_url":"`...)
	dst = append(dst, reservationURLPrefix...)
	dst = append(dst, reservationID...)
	dst = append(dst, `"}`...)
	return dst
}
