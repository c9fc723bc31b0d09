// Package entrypass mints and verifies entry passes: short-lived signed
// tickets, fetched before a sale, that bind one reserve to a campaign, a SKU,
// a user and a time window. The package is pure: the caller
// passes the time in and supplies the randomness; there is no I/O, no clock
// and no goroutine. ("Permit" already names seckill's admission bound, so
// these are entry passes everywhere.)
//
// # Layout (version 1)
//
// This comment is the format's specification; every constant it names is
// part of the wire format, frozen, and never reused for another meaning. A
// pass is the base64url encoding, without padding (RFC 4648, section 5), of
//
//	payload ‖ mac
//
// where all integers are big-endian and the payload is, in order:
//
//	size      field            type     rule
//	   1      version          uint8    Version (1)
//	   1      key_id           uint8    id of the signing key in the verifier's KeyRing
//	   1      campaign_len     uint8    1..64 (sku.MaxIDLength)
//	   c      campaign_id      bytes    sku.ValidID: [A-Za-z0-9._:-], not "." or ".."
//	   1      sku_len          uint8    1..64
//	   s      sku_id           bytes    sku.ValidID
//	   1      user_len         uint8    1..64
//	   u      user_id          bytes    sku.ValidID
//	   1      tier             uint8    opaque to this package
//	   1      risk             uint8    0 normal; >= 1 high risk
//	   1      subjects         uint8    presence flags; bits 4-7 are zero
//	 8*k      subject keys     [8]byte  one per set flag, in bit order (k set flags, 0..4)
//	   8      not_before_ms    int64    Unix ms, 0 <= not_before_ms
//	   8      expires_at_ms    int64    not_before_ms < expires_at_ms <= MaxTimeMs,
//	                                    expires_at_ms - not_before_ms <= MaxLifetimeMs
//	  16      nonce            bytes    from a cryptographic random source
//
// and mac is the 32-byte HMAC-SHA256, under the key named by key_id, of
// Domain ("seckill/entry-pass/v1" and one zero byte) followed by the payload:
//
//	+----+-----+---+--------+---+-----+---+------+----+----+-----+----------+------+------+-------+---------+
//	| 01 | kid | c | campgn | s | sku | u | user | tr | rk | flg | 8*k keys | nbf  | exp  | nonce | mac     |
//	+----+-----+---+--------+---+-----+---+------+----+----+-----+----------+------+------+-------+---------+
//	  1    1     1    c       1    s    1    u     1    1    1      8*k        8      8      16      32
//	|<----------------------------- payload: the MAC covers Domain ‖ payload ---------------------->|
//
// Subject flag bits, in the order their keys follow:
//
//	bit 0 (0x01) device           bit 2 (0x04) address
//	bit 1 (0x02) payment_account  bit 3 (0x08) network
//
// A pass is therefore MinPassSize (75) to MaxPassSize (296) bytes, and its
// text MinTextLength (100) to MaxTextLength (395) characters. The encoding is
// canonical: one set of fields, key and nonce gives exactly one text, and any
// other text (a flipped bit, a cut, an extra character, padding, a line break,
// non-zero trailing bits) is refused.
//
// # Verification order
//
// KeyRing.Verify checks, and refuses at the first failure, with the error
// class in brackets (Reason gives the same names as metric labels):
//
//  1. text length within MinTextLength..MaxTextLength, before decoding [malformed]
//  2. strict base64url without padding [malformed]
//  3. version byte [malformed]
//  4. key_id present in the ring [unknown_key]
//  5. MAC, compared in constant time (crypto/hmac.Equal) [bad_mac]
//  6. structure: the lengths and rules of the table, no byte left over [malformed]
//  7. campaign_id and sku_id equal the expected ones [wrong_scope]
//  8. user_id equals the expected one [wrong_user]
//  9. not_before_ms - LeewayMs <= now, else [not_yet_valid];
//     now < expires_at_ms + LeewayMs, else [expired]
//
// The structure is parsed only after the MAC holds, so nobody without a key
// reaches the parser. Step 6 does not recheck the id alphabet: a verified id
// equals the caller's, and the caller checks its own ids with sku.ValidID.
//
// # Subject keys
//
// A subject key is the first 8 bytes of HMAC-SHA256(subject secret,
// SubjectDomain ‖ kind ‖ value), where SubjectDomain is
// "seckill/entry-pass/subject/v1" and one zero byte and kind is the subject's
// bit number (one byte). The issuer computes it (SubjectHasher), so raw device
// ids, card numbers, addresses and IP prefixes never reach the sequencer or
// its log. The subject secret is not a signing key: it must stay the same
// across signing-key rotations, or one device would count as two while old
// and new passes are both alive.
//
// # Single use
//
// A pass's request_id is RequestIDPrefix ("ep.") followed by the base64url
// encoding, without padding, of its nonce (RequestID): 25 characters, valid
// under sku.ValidID. The reserve path dedups on request_id durably, so a
// replayed pass returns the first answer and never makes a second order.
//
// Borrowed ideas: the layout-as-doc and frozen constants follow
// cockroachdb/pebble record/record.go and nats-server filestore.go; the
// domain-separated HMAC replaces Queue-it's secret-suffix SHA-256 and JWT
// (an HS256 JWT parse costs about 18 µs here, this check under 1 µs).
package entrypass
