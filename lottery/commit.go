package lottery

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"strconv"
)

// Size is the size in bytes of a server seed, a commitment, a pseudonym
// key, a pseudonym, an entries root, a draw seed, a rank key and a beacon's
// randomness.
const Size = sha256.Size

// Hash is a 32-byte value of the rules: a seed, a commitment, a root or a key.
type Hash = [Size]byte

// Version is the rules' domain separator, the first bytes the draw seed
// hashes. A change of any rule gets a new version.
const Version = "seckill/lottery/v1"

// Commit returns SHA-256(server_seed): published when the SKU is defined,
// before any entry, so the seed revealed at the draw can be checked.
func Commit(serverSeed Hash) Hash { return sha256.Sum256(serverSeed[:]) }

// Pseudonym returns HMAC-SHA256(pseudonym_key, user_id): the name an entry
// has in the published pool. Without the key it reveals nothing of the user
// id; one user always gets the same pseudonym, so one entry per pseudonym
// shows one entry per user.
func Pseudonym(key Hash, userID string) Hash {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(userID))
	var p Hash
	m.Sum(p[:0])
	return p
}

// Seed returns the draw seed: SHA-256(Version 0x00 campaign 0x00 sku 0x00
// server_seed randomness entries_root). randomness must be Size bytes (the
// caller checks it: ErrBeaconLength).
func Seed(campaignID, skuID string, serverSeed Hash, randomness []byte, entriesRoot Hash) Hash {
	h := sha256.New()
	h.Write([]byte(Version))
	h.Write([]byte{0})
	h.Write([]byte(campaignID))
	h.Write([]byte{0})
	h.Write([]byte(skuID))
	h.Write([]byte{0})
	h.Write(serverSeed[:])
	h.Write(randomness)
	h.Write(entriesRoot[:])
	var s Hash
	h.Sum(s[:0])
	return s
}

// RankKey returns HMAC-SHA256(seed, decimal(seq)), the key entry seq is
// sorted by.
func RankKey(seed Hash, seq uint32) Hash {
	return newRanker(seed).key(seq)
}

// ranker computes rank keys with one reusable HMAC state.
type ranker struct {
	mac hash.Hash
	buf [10]byte
}

func newRanker(seed Hash) *ranker { return &ranker{mac: hmac.New(sha256.New, seed[:])} }

func (r *ranker) key(seq uint32) Hash {
	r.mac.Reset()
	r.mac.Write(strconv.AppendUint(r.buf[:0], uint64(seq), 10))
	var k Hash
	r.mac.Sum(k[:0])
	return k
}
