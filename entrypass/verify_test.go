package entrypass

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestVerifyRoundTrip(t *testing.T) {
	ring := mustRing(t, mustKey(t, 2, secret2), mustKey(t, 1, secret1))
	for _, c := range []Claims{testClaims(), longestClaims(), minimalClaims()} {
		text := mustEncode(t, ring.Signer(), c, testNonce)
		got, err := ring.Verify(text, Scope{c.CampaignID, c.SKUID, c.UserID}, testNow)
		if err != nil {
			t.Fatalf("Verify(%s): %v", text, err)
		}
		want := Pass{Claims: c, KeyID: 2, Nonce: testNonce}
		if got != want {
			t.Fatalf("Verify = %+v, want %+v", got, want)
		}
		if len(text) < MinTextLength || len(text) > MaxTextLength {
			t.Fatalf("text of %d characters outside %d-%d", len(text), MinTextLength, MaxTextLength)
		}
	}
	if got := len(mustEncode(t, ring.Signer(), minimalClaims(), testNonce)); got != MinTextLength {
		t.Fatalf("minimal pass is %d characters, want MinTextLength %d", got, MinTextLength)
	}
	if got := len(mustEncode(t, ring.Signer(), longestClaims(), testNonce)); got != MaxTextLength {
		t.Fatalf("longest pass is %d characters, want MaxTextLength %d", got, MaxTextLength)
	}
}

func TestMint(t *testing.T) {
	k := mustKey(t, 7, secret1)
	ring := mustRing(t, k)
	random := bytes.NewReader(append(testNonce[:], 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf))
	first, p1, err := Mint(k, testClaims(), random)
	if err != nil {
		t.Fatal(err)
	}
	second, p2, err := Mint(k, testClaims(), random)
	if err != nil {
		t.Fatal(err)
	}
	if first == second || p1.RequestID() == p2.RequestID() {
		t.Fatal("two nonces gave the same pass or request_id")
	}
	if first != mustEncode(t, k, testClaims(), testNonce) || p1.Nonce != testNonce || p1.KeyID != 7 {
		t.Fatalf("Mint did not use the reader's bytes as the nonce: %+v", p1)
	}
	for _, text := range []string{first, second} {
		if _, err := ring.Verify(text, testScope, testNow); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Mint(k, testClaims(), random); err == nil {
		t.Fatal("Mint with an exhausted reader succeeded")
	}
}

func TestEncodeRefusesBadClaims(t *testing.T) {
	k := mustKey(t, 1, secret1)
	for name, change := range map[string]func(*Claims){
		"empty campaign":         func(c *Claims) { c.CampaignID = "" },
		"sku with a slash":       func(c *Claims) { c.SKUID = "a/b" },
		"user of 65 characters":  func(c *Claims) { c.UserID = strings.Repeat("u", 65) },
		"user ..":                func(c *Claims) { c.UserID = ".." },
		"negative not_before":    func(c *Claims) { c.NotBeforeMs = -1 },
		"expires at not_before":  func(c *Claims) { c.ExpiresAtMs = c.NotBeforeMs },
		"lifetime above a day":   func(c *Claims) { c.ExpiresAtMs = c.NotBeforeMs + MaxLifetimeMs + 1 },
		"expires past MaxTimeMs": func(c *Claims) { c.NotBeforeMs, c.ExpiresAtMs = MaxTimeMs-10, MaxTimeMs+1 },
	} {
		c := testClaims()
		change(&c)
		if _, err := Encode(k, c, testNonce); !errors.Is(err, ErrBadClaims) {
			t.Errorf("%s: Encode error %v, want ErrBadClaims", name, err)
		}
	}
	c := testClaims()
	c.NotBeforeMs, c.ExpiresAtMs = MaxTimeMs-MaxLifetimeMs, MaxTimeMs
	if _, err := Encode(k, c, testNonce); err != nil {
		t.Errorf("the widest window at MaxTimeMs: %v", err)
	}
}

func TestVerifyScopeAndUser(t *testing.T) {
	ring := mustRing(t, mustKey(t, 1, secret1))
	text := mustEncode(t, ring.Signer(), testClaims(), testNonce)
	for _, tc := range []struct {
		name string
		want Scope
		err  error
	}{
		{"right", testScope, nil},
		{"other campaign", Scope{"c2", "s1", "alice"}, ErrWrongScope},
		{"other SKU", Scope{"c1", "s2", "alice"}, ErrWrongScope},
		{"SKU id as campaign", Scope{"s1", "c1", "alice"}, ErrWrongScope},
		{"alice's pass sent as bob", Scope{"c1", "s1", "bob"}, ErrWrongUser},
		{"user id with other case", Scope{"c1", "s1", "Alice"}, ErrWrongUser},
		{"user id prefix", Scope{"c1", "s1", "alic"}, ErrWrongUser},
		{"empty user", Scope{"c1", "s1", ""}, ErrWrongUser},
	} {
		_, err := ring.Verify(text, tc.want, testNow)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: Verify error %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestVerifyKeys(t *testing.T) {
	old, next := mustKey(t, 1, secret1), mustKey(t, 2, secret2)
	before := mustRing(t, old)         // before the rotation
	during := mustRing(t, next, old)   // the new key signs, both verify
	after := mustRing(t, next)         // the old key retired
	impostor := mustKey(t, 1, secret2) // key id 1 with another secret
	oldPass := mustEncode(t, before.Signer(), testClaims(), testNonce)
	newPass := mustEncode(t, during.Signer(), testClaims(), testNonce)
	forged := mustEncode(t, impostor, testClaims(), testNonce)
	if during.Signer() != next {
		t.Fatal("the ring's first key does not sign")
	}
	for _, tc := range []struct {
		name  string
		ring  *KeyRing
		text  string
		keyID uint8
		err   error
	}{
		{"old pass, old ring", before, oldPass, 1, nil},
		{"old pass, rotating ring", during, oldPass, 1, nil},
		{"new pass, rotating ring", during, newPass, 2, nil},
		{"new pass, old ring", before, newPass, 0, ErrUnknownKey},
		{"old pass, old key retired", after, oldPass, 0, ErrUnknownKey},
		{"forged under a known id", during, forged, 0, ErrBadMAC},
	} {
		p, err := tc.ring.Verify(tc.text, testScope, testNow)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: Verify error %v, want %v", tc.name, err, tc.err)
		}
		if err == nil && p.KeyID != tc.keyID {
			t.Errorf("%s: key id %d, want %d", tc.name, p.KeyID, tc.keyID)
		}
	}
}

func TestVerifyTimeBounds(t *testing.T) {
	ring := mustRing(t, mustKey(t, 1, secret1))
	c := testClaims()
	text := mustEncode(t, ring.Signer(), c, testNonce)
	for _, tc := range []struct {
		name string
		now  int64
		err  error
	}{
		{"long before", 0, ErrNotYetValid},
		{"just outside the leeway before", c.NotBeforeMs - LeewayMs - 1, ErrNotYetValid},
		{"at the leeway before", c.NotBeforeMs - LeewayMs, nil},
		{"at not_before", c.NotBeforeMs, nil},
		{"at expires_at", c.ExpiresAtMs, nil},
		{"last ms of the leeway after", c.ExpiresAtMs + LeewayMs - 1, nil},
		{"at the end of the leeway", c.ExpiresAtMs + LeewayMs, ErrExpired},
		{"a year later", c.ExpiresAtMs + 365*24*3600*1000, ErrExpired},
	} {
		_, err := ring.Verify(text, testScope, tc.now)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: Verify error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err == nil {
			continue
		}
		var te *TimeError
		if !errors.As(err, &te) || te.ExpiresAtMs != c.ExpiresAtMs || te.NotBeforeMs != c.NotBeforeMs || te.NowMs != tc.now {
			t.Errorf("%s: %v does not carry the window", tc.name, err)
		}
	}
}

// TestVerifyRefusesEveryDamage is the deterministic half of the fuzz
// property: every single-bit flip of the text and of the decoded bytes,
// every cut, every extra character and every line break is refused.
func TestVerifyRefusesEveryDamage(t *testing.T) {
	ring := mustRing(t, mustKey(t, 1, secret1))
	for _, c := range []Claims{testClaims(), minimalClaims(), longestClaims()} {
		want := Scope{c.CampaignID, c.SKUID, c.UserID}
		text := mustEncode(t, ring.Signer(), c, testNonce)
		checkFragile(t, ring, text, want)
		refused := func(what, damaged string) { t.Helper(); checkRefused(t, ring, what, damaged, want) }
		for i := range len(text) {
			refused("line break", text[:i]+"\n"+text[i:])
			refused("carriage return", text[:i]+"\r"+text[i:])
		}
		raw, err := encoding.DecodeString(text)
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			for bit := range 8 {
				b := bytes.Clone(raw)
				b[i] ^= 1 << bit
				refused("byte bit flip", encoding.EncodeToString(b))
			}
			refused("byte cut", encoding.EncodeToString(raw[:i]))
		}
		for _, extra := range []string{"A", "-", "_", "=", "==", "AAAA", "\n"} {
			refused("over-length "+extra, text+extra)
		}
		refused("an extra byte", encoding.EncodeToString(append(bytes.Clone(raw), 0)))
		if std := strings.NewReplacer("-", "+", "_", "/").Replace(text); std != text {
			refused("standard base64", std)
		}
	}
	refused := func(text string) {
		if _, err := ring.Verify(text, testScope, testNow); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Verify(%d characters) = %v, want ErrMalformed", len(text), err)
		}
	}
	refused("")
	refused(strings.Repeat("A", MinTextLength-1))
	refused(strings.Repeat("A", MaxTextLength+1))
	refused(strings.Repeat("A", 1<<20))
}

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("else"), "other"},
		{malformed("x"), "malformed"},
		{ErrUnknownKey, "unknown_key"},
		{ErrBadMAC, "bad_mac"},
		{ErrWrongScope, "wrong_scope"},
		{ErrWrongUser, "wrong_user"},
		{&TimeError{Err: ErrNotYetValid}, "not_yet_valid"},
		{&TimeError{Err: ErrExpired}, "expired"},
	} {
		if got := Reason(tc.err); got != tc.want {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
