package entrypass

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// Claims are the fields an issuer signs into a pass. Times are Unix
// milliseconds.
type Claims struct {
	CampaignID  string // sku.ValidID
	SKUID       string // sku.ValidID; single use is enforced per SKU
	UserID      string // sku.ValidID; the account the pass is for
	Tier        uint8  // opaque to this package
	Risk        uint8  // 0 normal; >= 1 high risk (a shorter payment window)
	Subjects    Subjects
	NotBeforeMs int64 // the pass is valid from here (less LeewayMs)
	ExpiresAtMs int64 // to here, exclusive (plus LeewayMs)
}

// Nonce is a pass's 16 random bytes; its request_id derives from it.
type Nonce [NonceSize]byte

// Pass is a verified pass: its claims, the id of the key that signed it,
// and its nonce.
type Pass struct {
	Claims
	KeyID uint8
	Nonce Nonce
}

// RequestID returns the request_id the pass's reserve must use (the
// package-level RequestID of its nonce).
func (p Pass) RequestID() string { return RequestID(p.Nonce) }

// ErrBadClaims is wrapped by Encode and Mint when the claims break a rule
// of the layout; the message names the field.
var ErrBadClaims = errors.New("entrypass: bad claims")

// validateIDs checks the three ids against the engine's id rule.
func (c Claims) validateIDs() error {
	for _, f := range [...]struct{ name, id string }{
		{"campaign_id", c.CampaignID}, {"sku_id", c.SKUID}, {"user_id", c.UserID},
	} {
		if !sku.ValidID(f.id) {
			return fmt.Errorf("%w: %s must be %s", ErrBadClaims, f.name, sku.IDRule)
		}
	}
	return nil
}

// timesValid is the rule on the two times, shared by Encode and Verify.
func timesValid(notBeforeMs, expiresAtMs int64) bool {
	return notBeforeMs >= 0 && notBeforeMs < expiresAtMs && expiresAtMs <= MaxTimeMs &&
		expiresAtMs-notBeforeMs <= MaxLifetimeMs
}

// validate checks every rule of the layout Encode can break.
func (c Claims) validate() error {
	if err := c.validateIDs(); err != nil {
		return err
	}
	if !timesValid(c.NotBeforeMs, c.ExpiresAtMs) {
		return fmt.Errorf("%w: need 0 <= not_before_ms < expires_at_ms <= %d and a lifetime of at most %d ms",
			ErrBadClaims, int64(MaxTimeMs), MaxLifetimeMs)
	}
	return nil
}
