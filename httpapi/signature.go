package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign returns the X-Signature of a payment callback body:
// hex(HMAC-SHA256(secret, body)). Payment providers (and tests) use it to
// sign; the server checks with the same function.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// signatureOK checks X-Signature against the raw body, in constant time.
// With no payment secret configured every callback passes (main warns at
// start).
func (s *Server) signatureOK(body, header []byte) bool {
	if len(s.cfg.PaymentSecret) == 0 {
		return true
	}
	got := make([]byte, sha256.Size)
	if len(header) != hex.EncodedLen(sha256.Size) {
		return false
	}
	if _, err := hex.Decode(got, header); err != nil {
		return false
	}
	mac := hmac.New(sha256.New, s.cfg.PaymentSecret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
