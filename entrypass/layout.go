package entrypass

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/seckill/seckill/actors/sku"
)

// Wire-format constants of version 1 (see the package doc). Frozen: a new
// layout gets a new Version and a new Domain, never new values here.
const (
	// Version is the first byte of every version-1 pass.
	Version = 1
	// Domain prefixes the payload under the MAC, so a MAC made for another
	// purpose with the same key never verifies as a pass.
	Domain = "seckill/entry-pass/v1\x00"
	// NonceSize is the length of a pass's random nonce in bytes.
	NonceSize = 16
	// SubjectKeySize is the length of one subject key in bytes.
	SubjectKeySize = 8
	// MACSize is the length of the HMAC-SHA256 tag that ends a pass.
	MACSize = sha256.Size
	// MaxIDLength is the longest campaign, SKU or user id in a pass: the
	// engine's id rule (sku.MaxIDLength).
	MaxIDLength = sku.MaxIDLength

	// fixedSize is the payload without ids and subject keys: version, key
	// id, three id lengths, tier, risk, subject flags, two times, nonce.
	fixedSize = 1 + 1 + 3 + 1 + 1 + 1 + 8 + 8 + NonceSize

	// MinPassSize is the shortest decoded pass: 1-byte ids, no subject key.
	MinPassSize = fixedSize + 3 + MACSize
	// MaxPassSize is the longest decoded pass: 64-byte ids, four subject keys.
	MaxPassSize = fixedSize + 3*MaxIDLength + SubjectKindCount*SubjectKeySize + MACSize
	// MinTextLength is the shortest pass text, in characters.
	MinTextLength = (MinPassSize*8 + 5) / 6
	// MaxTextLength is the longest pass text, in characters. Verify refuses
	// a longer text before decoding any of it.
	MaxTextLength = (MaxPassSize*8 + 5) / 6

	// MaxLifetimeMs bounds expires_at_ms - not_before_ms: one day.
	MaxLifetimeMs = 24 * 60 * 60 * 1000
	// MaxTimeMs bounds both times: 2^53 - 1, the largest integer a
	// JavaScript gateway holds exactly.
	MaxTimeMs = 1<<53 - 1

	// LeewayMs is the clock skew Verify tolerates at both ends of a pass's
	// window, in milliseconds.
	LeewayMs = 2_000
)

// encoding is the pass text's alphabet: base64url, no padding, strict (the
// unused low bits of the last character must be zero), so the text is
// canonical.
var encoding = base64.RawURLEncoding.Strict()
