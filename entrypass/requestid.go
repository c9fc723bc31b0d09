package entrypass

import "encoding/base64"

// RequestIDPrefix starts every request_id derived from a pass. The HTTP
// layer must refuse it on a request_id that a client names without a pass
// (otherwise whoever saw a pass could spend its request_id first).
const RequestIDPrefix = "ep."

// RequestIDLength is the length of every pass-derived request_id: the
// prefix and 22 base64url characters.
const RequestIDLength = len(RequestIDPrefix) + (NonceSize*8+5)/6

// RequestID returns the request_id of the pass with this nonce:
// RequestIDPrefix ‖ base64url-without-padding(nonce), 25 characters of
// [A-Za-z0-9._-], so valid under sku.ValidID. A reserve with a pass uses it
// as its request_id, so the engine's durable request index makes the pass
// single-use with no new state: a replay gets the first answer, also after
// a cancel, an expiry or a restart. The nonce is not secret (it is in the
// pass text), so this id is no capability.
func RequestID(nonce Nonce) string {
	var b [RequestIDLength]byte
	copy(b[:], RequestIDPrefix)
	base64.RawURLEncoding.Encode(b[len(RequestIDPrefix):], nonce[:])
	return string(b[:])
}
