package bench

import (
	"crypto/sha256"
	"time"

	"github.com/seckill/seckill/entrypass"
)

// passLifetime is how long the tool's passes are valid: as long as the
// layout allows, so a long run never sees one expire.
const passLifetime = entrypass.MaxLifetimeMs * time.Millisecond

// passMinter mints the entry passes of one SKU's reserves (--entry-pass-keys:
// the tool stands in for the gateway that would issue them). A pass's nonce
// is derived from the tool's request_id, so a resend of an attempt carries a
// pass with the same request_id and gets the first answer, as a retry with
// the same request_id does without passes.
type passMinter struct {
	key         *entrypass.Key
	campaignID  string
	skuID       string
	notBeforeMs int64
}

// newPassMinter returns the minter of one SKU, or nil without a ring.
func newPassMinter(ring *entrypass.KeyRing, campaignID, skuID string, now time.Time) *passMinter {
	if ring == nil {
		return nil
	}
	// A little before now, so a server whose clock is behind ours by less
	// than that takes the passes.
	return &passMinter{key: ring.Signer(), campaignID: campaignID, skuID: skuID, notBeforeMs: now.Add(-time.Minute).UnixMilli()}
}

// mint returns the pass of attempt requestID for userID. Its nonce is the
// first 16 bytes of SHA-256(campaign, SKU, request_id). userID must be a
// valid id (the plan's are).
func (m *passMinter) mint(requestID, userID string) (string, error) {
	var scratch [256]byte // ids of up to 64 characters: no allocation
	input := scratch[:0]
	for _, s := range [...]string{m.campaignID, m.skuID, requestID} {
		input = append(append(input, s...), 0)
	}
	sum := sha256.Sum256(input)
	var nonce entrypass.Nonce
	copy(nonce[:], sum[:])
	return entrypass.Encode(m.key, entrypass.Claims{
		CampaignID: m.campaignID, SKUID: m.skuID, UserID: userID,
		NotBeforeMs: m.notBeforeMs, ExpiresAtMs: m.notBeforeMs + passLifetime.Milliseconds(),
	}, nonce)
}
