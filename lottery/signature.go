package lottery

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/cloudflare/circl/sign/bls"
)

// drand quicknet's beacon signatures (scheme bls-unchained-g1-rfc9380):
// round R's signature is a BLS signature (BLS12-381, signature on G1,
// public key on G2; hash to G1 per RFC 9380 with the domain separation tag
// BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_) of SHA-256(R as 8 bytes
// big-endian) under the group's public key, 48 bytes compressed; the
// round's randomness is SHA-256(signature).
//
// QuicknetPublicKey is the group public key of quicknet's chain info
// (chain hash QuicknetChainHash, GET /{chain hash}/info of any drand HTTP
// relay; the same constant is in drand's own tests: drand/drand
// common/chain/info_test.go and drand/tlock networks/fixed/fixed_test.go).
// It is fixed for the life of the chain: the chain hash commits to it.
const (
	QuicknetChainHash = "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"
	QuicknetPublicKey = "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c" +
		"8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb" +
		"5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
	// SignatureSize is the length of a quicknet signature (a compressed
	// G1 point).
	SignatureSize = 48
)

// Errors of the beacon signature check.
var (
	// ErrSignatureLength: the signature is not SignatureSize bytes.
	ErrSignatureLength = errors.New("beacon signature must be 48 bytes")
	// ErrBadSignature: the signature is not the beacon's for the round.
	ErrBadSignature = errors.New("beacon signature does not verify under the beacon's public key for the round")
	// ErrRandomnessMismatch: the randomness is not SHA-256 of the signature.
	ErrRandomnessMismatch = errors.New("beacon randomness is not SHA-256 of the signature")
)

// quicknetKey is QuicknetPublicKey parsed (and checked on the curve) once.
var quicknetKey = sync.OnceValue(func() *bls.PublicKey[bls.KeyG2SigG1] {
	b, err := hex.DecodeString(QuicknetPublicKey)
	if err != nil {
		panic(err)
	}
	var pk bls.PublicKey[bls.KeyG2SigG1]
	if err := pk.UnmarshalBinary(b); err != nil || !pk.Validate() {
		panic(fmt.Sprintf("lottery: quicknet public key: %v", err))
	}
	return &pk
})

// RandomnessOf returns the randomness a beacon signature gives:
// SHA-256(signature).
func RandomnessOf(signature []byte) Hash { return sha256.Sum256(signature) }

// CheckSignature checks that signature is source's signature of round and
// that randomness is SHA-256(signature). Errors wrap ErrUnknownSource,
// ErrBadRound, ErrSignatureLength, ErrRandomnessMismatch or
// ErrBadSignature. Pure computation (two pairings, ~2 ms).
func CheckSignature(source string, round uint64, randomness Hash, signature []byte) error {
	if _, err := RoundTimeMs(source, round); err != nil {
		return err
	}
	if len(signature) != SignatureSize {
		return fmt.Errorf("%w: got %d", ErrSignatureLength, len(signature))
	}
	if RandomnessOf(signature) != randomness {
		return ErrRandomnessMismatch
	}
	if !verifyRound(quicknetKey(), round, signature) {
		return fmt.Errorf("%w (round %d)", ErrBadSignature, round)
	}
	return nil
}

// verifyRound checks an unchained drand signature of round under pk.
func verifyRound(pk *bls.PublicKey[bls.KeyG2SigG1], round uint64, signature []byte) bool {
	var r [8]byte
	binary.BigEndian.PutUint64(r[:], round)
	msg := sha256.Sum256(r[:])
	return bls.Verify(pk, msg[:], signature)
}
