package entrypass

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"
)

// seal MACs an arbitrary payload the way Encode does and encodes it: the
// fuzz targets and the test vectors use it to reach the parser behind the
// MAC with payloads Encode would never write.
func seal(k *Key, payload []byte) string {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(Domain))
	m.Write(payload)
	return encoding.EncodeToString(m.Sum(append([]byte(nil), payload...)))
}

// payloadOf returns the payload Encode signs for c under key id 1.
func payloadOf(c Claims) []byte {
	return appendPayload(nil, 1, c, testNonce)
}

// knownReason reports whether err is nil or of one of Verify's classes.
func knownReason(err error) bool { return Reason(err) != "other" }

// checkCanonical fails unless an accepted text is exactly what Encode makes
// of the pass it decoded to.
func checkCanonical(t *testing.T, ring *KeyRing, text string, p Pass) {
	t.Helper()
	i := ring.find(p.KeyID)
	if i < 0 {
		t.Fatalf("accepted a pass of key %d, not in the ring", p.KeyID)
	}
	again, err := Encode(ring.keys[i], p.Claims, p.Nonce)
	if err != nil {
		t.Fatalf("accepted a pass Encode refuses: %v", err)
	}
	if again != text {
		t.Fatalf("accepted a text that is not canonical:\n got %q\nwant %q", text, again)
	}
}

// FuzzVerify feeds Verify arbitrary text: it never panics, every error has
// a class, and what it accepts is canonical and breaks under any bit flip,
// cut or extra character.
func FuzzVerify(f *testing.F) {
	k1, k2 := mustKey(f, 1, secret1), mustKey(f, 2, secret2)
	ring := mustRing(f, k2, k1)
	for _, c := range []Claims{testClaims(), minimalClaims(), longestClaims()} {
		for _, k := range []*Key{k1, k2} {
			text := mustEncode(f, k, c, testNonce)
			f.Add(text)
			f.Add(text[:len(text)-1])
			f.Add(text + "A")
			f.Add(text[:10] + "\n" + text[10:])
		}
	}
	f.Add("")
	f.Add(strings.Repeat("A", MinTextLength))
	f.Add(strings.Repeat("_", MaxTextLength))
	f.Add(strings.Repeat("=", MaxTextLength+1))
	var scopes []Scope
	for _, c := range []Claims{testClaims(), minimalClaims(), longestClaims()} {
		scopes = append(scopes, Scope{c.CampaignID, c.SKUID, c.UserID})
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, want := range scopes {
			p, err := ring.Verify(text, want, testNow)
			if !knownReason(err) {
				t.Fatalf("error without a class: %v", err)
			}
			if pb, errb := ring.VerifyBytes([]byte(text), want, testNow); pb != p || Reason(errb) != Reason(err) {
				t.Fatalf("VerifyBytes: %+v, %v; Verify: %+v, %v", pb, errb, p, err)
			}
			if err == nil {
				checkCanonical(t, ring, text, p)
				checkFragile(t, ring, text, want)
			}
		}
	})
}

// checkFragile fails unless every bit flip, cut and extra character of an
// accepted text is refused, as malformed, bad_mac or unknown_key: no damage
// gets past the MAC.
func checkFragile(t *testing.T, ring *KeyRing, text string, want Scope) {
	t.Helper()
	for i := range len(text) {
		for bit := range 8 {
			b := []byte(text)
			b[i] ^= 1 << bit
			checkRefused(t, ring, "a bit flip", string(b), want)
		}
		checkRefused(t, ring, "a cut", text[:i], want)
	}
	checkRefused(t, ring, "an extra character", text+"A", want)
}

// checkRefused fails unless Verify refuses a damaged text before or at
// the MAC.
func checkRefused(t *testing.T, ring *KeyRing, what, damaged string, want Scope) {
	t.Helper()
	_, err := ring.Verify(damaged, want, testNow)
	if r := Reason(err); r != "malformed" && r != "bad_mac" && r != "unknown_key" {
		t.Fatalf("%s: %q gives %q (%v), want malformed, bad_mac or unknown_key", what, damaged, r, err)
	}
}

// FuzzVerifySealed reaches the parser behind the MAC: it seals arbitrary
// payloads with a key of the ring. Verify never panics, every error has a
// class, and an accepted payload is exactly what Encode writes.
func FuzzVerifySealed(f *testing.F) {
	k1 := mustKey(f, 1, secret1)
	ring := mustRing(f, k1)
	for _, c := range []Claims{testClaims(), minimalClaims(), longestClaims()} {
		b := payloadOf(c)
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(append(b, 0))
	}
	f.Add([]byte{Version, 1})
	f.Add([]byte{Version, 1, 0, 0, 0})
	f.Add([]byte{Version, 1, 255})
	f.Fuzz(func(t *testing.T, payload []byte) {
		text := seal(k1, payload)
		p, err := ring.Verify(text, testScope, testNow)
		if !knownReason(err) {
			t.Fatalf("error without a class: %v", err)
		}
		if err == nil {
			checkCanonical(t, ring, text, p)
		}
	})
}
