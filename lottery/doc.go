// Package lottery holds the pure rules of a lottery sale: the commitment to
// a server seed, the canonical pool and its root, the pseudonyms that keep
// user ids out of the published pool, the draw seed, the rank keys and the
// allocation of units to tiers, winners, waitlist and lost. It does no I/O,
// reads no clock and starts no goroutine: the SKU actor records what these
// functions decide, and the auditor (seckillctl lottery verify) calls the
// same functions to recompute it.
//
// The design follows RFC 3797 (the IETF's verifiable selection of its
// nominating committee): publish the pool and the algorithm first, take
// randomness from a public source that is only known after the pool is
// closed, and let anyone recompute the result.
//
// # Byte-exact rules (version "seckill/lottery/v1")
//
// All hashes are SHA-256, all MACs HMAC-SHA256, and every hash or key is
// written as lowercase hex when it is shown.
//
//	commit        = SHA-256(server_seed)                server_seed: 32 random bytes
//	pseudonym     = HMAC-SHA256(key = pseudonym_key, msg = user_id)
//	pool line     = decimal(entry_seq) "," hex(pseudonym) "," decimal(tier) "\n"
//	entries_root  = SHA-256(pool lines in ascending entry_seq order)
//	seed          = SHA-256("seckill/lottery/v1" 0x00 campaign_id 0x00 sku_id 0x00
//	                        server_seed randomness entries_root)
//	rank_key(seq) = HMAC-SHA256(key = seed, msg = decimal(seq))
//
// decimal(n) is the shortest base-10 form (no sign, no leading zero),
// entry_seq counts entries from 1, randomness is the beacon round's 32-byte
// value (drand's randomness = SHA-256 of the round's signature), and
// server_seed and entries_root enter the seed as raw bytes, not hex.
//
// When the draw is given the round's signature too, CheckSignature
// (signature.go) checks it before anything is recorded, and Verify checks
// it again: the BLS signature (bls-unchained-g1-rfc9380) of
// SHA-256(round as 8 bytes big-endian) under quicknet's group public key,
// and randomness = SHA-256(signature).
//
// The ranking sorts the pool by rank_key ascending (bytewise), ties by
// entry_seq ascending. The allocation then walks the declared tiers in
// order: tier T with quota Q takes, in rank order, the first Q entries not
// yet chosen whose tier is T or higher; a quota "rest" takes everything the
// earlier tiers left of the units; quota a tier could not fill rolls down to
// the next tier. With no tiers declared the rule is one tier 0 with quota
// "rest". The chosen entries are the winners, in rank order (winner i gets
// the i-th reservation of the draw); the next `waitlist` entries in rank
// order that were not chosen form the waitlist, whatever their tier; every
// other entry lost.
//
// A keyed-hash sort, rather than a seeded shuffle, ignores the order the
// pool is listed in, needs no random-number-stream contract, and takes a few
// lines in any language (see reference/lottery.py).
package lottery
