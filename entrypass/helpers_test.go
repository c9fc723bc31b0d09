package entrypass

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// Test keys: fixed secrets, so failures reproduce, with no repeated
// pattern, so a byte-order slip in another implementation shows. Key 1 is
// the old key, key 2 the new one of a rotation.
var (
	secret1 = testSecret("seckill entry pass test key 1")
	secret2 = testSecret("seckill entry pass test key 2")
)

func testSecret(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

func mustKey(t testing.TB, id uint8, secret []byte) *Key {
	t.Helper()
	k, err := NewKey(id, secret)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRing(t testing.TB, keys ...*Key) *KeyRing {
	t.Helper()
	r, err := NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testNow is the verifier's clock in the tests (2026-12-01T16:00:00Z).
const testNow int64 = 1_796_140_800_000

// testClaims is a pass for alice in c1/s1 with two subjects, valid ten
// minutes around testNow.
func testClaims() Claims {
	c := Claims{
		CampaignID: "c1", SKUID: "s1", UserID: "alice",
		Tier: 2, Risk: 1,
		NotBeforeMs: testNow - 60_000, ExpiresAtMs: testNow + 540_000,
	}
	c.Subjects.Set(SubjectDevice, SubjectKey{1, 2, 3, 4, 5, 6, 7, 8})
	c.Subjects.Set(SubjectNetwork, SubjectKey{9, 9, 9, 9, 9, 9, 9, 9})
	return c
}

var testScope = Scope{CampaignID: "c1", SKUID: "s1", UserID: "alice"}

var testNonce = Nonce{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}

func mustEncode(t testing.TB, k *Key, c Claims, nonce Nonce) string {
	t.Helper()
	text, err := Encode(k, c, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// longestClaims fills every variable field to its maximum.
func longestClaims() Claims {
	c := testClaims()
	c.CampaignID = string(bytes.Repeat([]byte{'c'}, MaxIDLength))
	c.SKUID = string(bytes.Repeat([]byte{'s'}, MaxIDLength))
	c.UserID = string(bytes.Repeat([]byte{'u'}, MaxIDLength))
	for k := SubjectKind(0); k < SubjectKindCount; k++ {
		c.Subjects.Set(k, SubjectKey{byte(k), 0xff})
	}
	return c
}

// minimalClaims is the shortest pass: 1-character ids, no subject key.
func minimalClaims() Claims {
	return Claims{CampaignID: "c", SKUID: "s", UserID: "u", NotBeforeMs: testNow, ExpiresAtMs: testNow + 1}
}
