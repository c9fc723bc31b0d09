// Package paysig is the signature of seckill's payment callbacks:
// X-Signature = hex(HMAC-SHA256(secret, raw body)). The payment system
// (or the client package) signs with Sign; seckilld checks with Verify.
// A signed body must also name its reservation_id, so that it cannot be
// replayed on another reservation (checked by seckilld, not here).
package paysig

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Header is the header that carries the signature.
const Header = "X-Signature"

// Sign returns the X-Signature of body.
func Sign(secret, body []byte) string {
	return hex.EncodeToString(mac(secret, body))
}

// Verify reports whether header is the signature of body, in constant time.
func Verify(secret, body, header []byte) bool {
	if len(header) != hex.EncodedLen(sha256.Size) {
		return false
	}
	got := make([]byte, sha256.Size)
	if _, err := hex.Decode(got, header); err != nil {
		return false
	}
	return hmac.Equal(got, mac(secret, body))
}

func mac(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}
