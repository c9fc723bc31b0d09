package entrypass

import (
	"errors"
	"fmt"
)

// Verify's error classes, one sentinel each; test with errors.Is. The HTTP
// layer answers 403 ENTRY_PASS_EXPIRED for ErrExpired (with TimeError's
// ExpiresAtMs) and one 403 ENTRY_PASS_INVALID for every other class, so the
// answer is no oracle; the class goes to the log and to a metric label
// (Reason). None of these messages carries a pass, key or id value.
var (
	// ErrMalformed: the text is too short or too long, not canonical
	// base64url, of another version, or its MACed payload breaks a rule of
	// the layout.
	ErrMalformed = errors.New("entrypass: malformed pass")
	// ErrUnknownKey: the pass names a key id the ring does not hold
	// (retired, or never issued).
	ErrUnknownKey = errors.New("entrypass: unknown key id")
	// ErrBadMAC: the MAC does not match the payload under the named key.
	ErrBadMAC = errors.New("entrypass: bad MAC")
	// ErrWrongScope: the pass is for another campaign or SKU.
	ErrWrongScope = errors.New("entrypass: pass for another campaign or SKU")
	// ErrWrongUser: the pass is for another user.
	ErrWrongUser = errors.New("entrypass: pass for another user")
	// ErrNotYetValid: now is before not_before_ms - LeewayMs (a *TimeError).
	ErrNotYetValid = errors.New("entrypass: pass not yet valid")
	// ErrExpired: now is at or after expires_at_ms + LeewayMs (a *TimeError).
	ErrExpired = errors.New("entrypass: pass expired")
)

// TimeError is the error for a pass outside its window: Err is
// ErrNotYetValid or ErrExpired, and the bounds say when the pass is valid.
// Use errors.As to read them.
type TimeError struct {
	Err         error
	NotBeforeMs int64
	ExpiresAtMs int64
	NowMs       int64
}

// Error names the class and the three times (Unix ms).
func (e *TimeError) Error() string {
	return fmt.Sprintf("%v: valid from %d to %d (ms), now %d, leeway %d ms",
		e.Err, e.NotBeforeMs, e.ExpiresAtMs, e.NowMs, LeewayMs)
}

// Unwrap returns ErrNotYetValid or ErrExpired.
func (e *TimeError) Unwrap() error { return e.Err }

// reasons pairs each class with its metric label, in verification order.
var reasons = [...]struct {
	err   error
	label string
}{
	{ErrMalformed, "malformed"},
	{ErrUnknownKey, "unknown_key"},
	{ErrBadMAC, "bad_mac"},
	{ErrWrongScope, "wrong_scope"},
	{ErrWrongUser, "wrong_user"},
	{ErrNotYetValid, "not_yet_valid"},
	{ErrExpired, "expired"},
}

// Reason returns the class of a Verify error as a metric label: malformed,
// unknown_key, bad_mac, wrong_scope, wrong_user, not_yet_valid, expired;
// "" for nil and "other" for an error not from Verify. The test vectors and
// the reference implementation use the same names.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return "other"
}
