package entrypass

import "testing"

// BenchmarkVerify is the hot-path check of a reserve with a pass: its
// budget is at most 2 µs and 1 allocation, a small part of a reserve.
func BenchmarkVerify(b *testing.B) {
	ring := mustRing(b, mustKey(b, 2, secret2), mustKey(b, 1, secret1))
	text := mustEncode(b, ring.Signer(), testClaims(), testNonce)
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ring.Verify(text, testScope, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyBytes is BenchmarkVerify of the text as bytes, read in
// place (a reserve's body).
func BenchmarkVerifyBytes(b *testing.B) {
	ring := mustRing(b, mustKey(b, 2, secret2), mustKey(b, 1, secret1))
	text := []byte(mustEncode(b, ring.Signer(), testClaims(), testNonce))
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := ring.VerifyBytes(text, testScope, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyLongest verifies a pass of MaxTextLength characters.
func BenchmarkVerifyLongest(b *testing.B) {
	ring := mustRing(b, mustKey(b, 1, secret1))
	c := longestClaims()
	text := mustEncode(b, ring.Signer(), c, testNonce)
	if len(text) != MaxTextLength {
		b.Fatalf("text is %d characters, want %d", len(text), MaxTextLength)
	}
	want := Scope{CampaignID: c.CampaignID, SKUID: c.SKUID, UserID: c.UserID}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ring.Verify(text, want, testNow); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode is the issuer's cost per pass.
func BenchmarkEncode(b *testing.B) {
	k := mustKey(b, 1, secret1)
	c := testClaims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(k, c, testNonce); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerifyAllocations holds Verify's allocation budget (at most one) in every build: verifyWith, all of Verify but the pool, allocates
// nothing. (With -race, sync.Pool drops a quarter of what it is given, so
// Verify itself is measured by BenchmarkVerify.)
func TestVerifyAllocations(t *testing.T) {
	ring := mustRing(t, mustKey(t, 2, secret2), mustKey(t, 1, secret1))
	text := mustEncode(t, ring.keys[1], testClaims(), testNonce)
	s := ring.scratch.Get().(*verifyScratch)
	b := []byte(text)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := ring.verifyWith(s, b, testScope, testNow); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("a valid pass costs %v allocations, want 0", allocs)
	}
}
