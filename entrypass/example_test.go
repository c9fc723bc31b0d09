package entrypass_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/seckill/seckill/entrypass"
)

// An issuer mints a pass; seckilld verifies it at reserve time. The nonce
// comes from a fixed reader here so the output is stable; use
// crypto/rand.Reader.
func Example() {
	ring, err := entrypass.ParseKeyRing("2:" + strings.Repeat("ab", 32) + ",1:" + strings.Repeat("cd", 32))
	if err != nil {
		panic(err)
	}
	hasher, err := entrypass.NewSubjectHasher(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		panic(err)
	}
	const now = 1_796_140_800_000 // Unix ms
	c := entrypass.Claims{CampaignID: "c1", SKUID: "s1", UserID: "alice", NotBeforeMs: now, ExpiresAtMs: now + 600_000}
	c.Subjects.Set(entrypass.SubjectDevice, hasher.Hash(entrypass.SubjectDevice, "device:7f3c2a9e"))
	text, pass, err := entrypass.Mint(ring.Signer(), c, bytes.NewReader(make([]byte, entrypass.NonceSize)))
	if err != nil {
		panic(err)
	}
	fmt.Println(ring, len(text), "characters, request_id", pass.RequestID())

	got, err := ring.Verify(text, entrypass.Scope{CampaignID: "c1", SKUID: "s1", UserID: "alice"}, now+1_000)
	fmt.Println(got.UserID, got.KeyID, err)
	_, err = ring.Verify(text, entrypass.Scope{CampaignID: "c1", SKUID: "s1", UserID: "bob"}, now+1_000)
	fmt.Println(entrypass.Reason(err))
	_, err = ring.Verify(text, entrypass.Scope{CampaignID: "c1", SKUID: "s1", UserID: "alice"}, now+3_600_000)
	var te *entrypass.TimeError
	fmt.Println(entrypass.Reason(err), errors.As(err, &te) && te.ExpiresAtMs == now+600_000)
	// Output:
	// entrypass.KeyRing(sign 2; verify 2,1) 119 characters, request_id ep.AAAAAAAAAAAAAAAAAAAAAA
	// alice 2 <nil>
	// wrong_user
	// expired true
}
