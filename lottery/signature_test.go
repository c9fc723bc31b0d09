package lottery

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cloudflare/circl/sign/bls"
	"github.com/seckill/seckill/lottery/lotterytest"
)

func TestCheckSignatureQuicknet(t *testing.T) {
	v := lotterytest.Load(t)
	quicknetRound := v.Quicknet.Round
	walkthroughRound, walkthroughSignature := v.Walkthrough.Round, v.Walkthrough.Signature
	sig := v.Quicknet.Signature
	rnd := RandomnessOf(sig)
	if err := CheckSignature(SourceDrandQuicknet, quicknetRound, rnd, sig); err != nil {
		t.Fatalf("a published quicknet round: %v", err)
	}
	flipped := append([]byte(nil), sig...)
	flipped[20] ^= 1
	other := RandomnessOf(walkthroughSignature)
	for _, c := range []struct {
		name       string
		source     string
		round      uint64
		randomness Hash
		sig        []byte
		want       error
	}{
		{"the next round", SourceDrandQuicknet, quicknetRound + 1, rnd, sig, ErrBadSignature},
		{"the round before", SourceDrandQuicknet, quicknetRound - 1, rnd, sig, ErrBadSignature},
		{"a flipped bit", SourceDrandQuicknet, quicknetRound, RandomnessOf(flipped), flipped, nil},
		{"randomness of another signature", SourceDrandQuicknet, quicknetRound, other, sig, ErrRandomnessMismatch},
		{"a short signature", SourceDrandQuicknet, quicknetRound, RandomnessOf(sig[:47]), sig[:47], ErrSignatureLength},
		{"another chain's signature", SourceDrandQuicknet, walkthroughRound, RandomnessOf(walkthroughSignature), walkthroughSignature, ErrBadSignature},
		{"an unknown source", "drand-mainnet", quicknetRound, rnd, sig, ErrUnknownSource},
		{"round 0", SourceDrandQuicknet, 0, rnd, sig, ErrBadRound},
	} {
		err := CheckSignature(c.source, c.round, c.randomness, c.sig)
		switch {
		case err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// The scheme itself on another chain of drand with the same scheme: the
// published randomness is SHA-256 of the signature, and the signature
// verifies for its round only.
func TestVerifyRoundRFC9380(t *testing.T) {
	w := lotterytest.Load(t).Walkthrough
	var pk bls.PublicKey[bls.KeyG2SigG1]
	if err := pk.UnmarshalBinary(w.PublicKey); err != nil {
		t.Fatal(err)
	}
	sig := w.Signature
	if got := RandomnessOf(sig); !bytes.Equal(got[:], w.Randomness) {
		t.Fatalf("randomness %x, published %x", got, w.Randomness)
	}
	if !verifyRound(&pk, w.Round, sig) {
		t.Fatal("a published round does not verify")
	}
	if verifyRound(&pk, w.Round+17, sig) || verifyRound(quicknetKey(), w.Round, sig) {
		t.Fatal("verifies for another round or under another key")
	}
}
