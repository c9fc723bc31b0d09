package fakeapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// signature returns hex(HMAC-SHA256(secret, body)), the X-Signature of a payment.
func signature(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
