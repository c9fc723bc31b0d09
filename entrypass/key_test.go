package entrypass

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestParseKeyRing(t *testing.T) {
	hex1, hex2 := hex.EncodeToString(secret1), hex.EncodeToString(secret2)
	ring, err := ParseKeyRing(" 2:" + hex2 + " , 1:" + hex1 + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(ring.IDs()); ids != "[2 1]" || ring.Signer().ID() != 2 {
		t.Fatalf("ids %s, signer %d", ids, ring.Signer().ID())
	}
	// The parsed ring verifies what the same keys made by hand sign.
	text := mustEncode(t, mustKey(t, 1, secret1), testClaims(), testNonce)
	if _, err := ring.Verify(text, testScope, testNow); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct{ name, in, says string }{
		{"empty", "", "entry 1 is not kid:hex"},
		{"no colon", hex1, "entry 1 is not kid:hex"},
		{"trailing comma", "1:" + hex1 + ",", "entry 2 is not kid:hex"},
		{"id too large", "256:" + hex1, "entry 1: key id must be a decimal 0-255"},
		{"id not decimal", "k1:" + hex1, "entry 1: key id must be a decimal 0-255"},
		{"odd hex", "1:" + hex1[1:], "key id 1: the secret is not an even number of hex digits"},
		{"not hex", "1:" + strings.Repeat("zz", 32), "key id 1: the secret is not an even number of hex digits"},
		{"short secret", "1:" + hex1[:62], "key id 1: the secret is 31 bytes, need 32-64"},
		{"long secret", "1:" + strings.Repeat("ab", 65), "key id 1: the secret is 65 bytes, need 32-64"},
		{"duplicate id", "1:" + hex1 + ",1:" + hex2, "key id 1 appears twice"},
	} {
		_, err := ParseKeyRing(tc.in)
		if !errors.Is(err, ErrBadKeyRing) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want ErrBadKeyRing saying %q", tc.name, err, tc.says)
			continue
		}
		if strings.Contains(err.Error(), hex1[:16]) || strings.Contains(err.Error(), "zz") {
			t.Errorf("%s: error %q shows key material", tc.name, err)
		}
	}
	if _, err := NewKeyRing(); !errors.Is(err, ErrBadKeyRing) {
		t.Errorf("NewKeyRing() = %v, want ErrBadKeyRing", err)
	}
	if _, err := NewKey(1, secret1[:31]); !errors.Is(err, ErrBadSecret) {
		t.Errorf("NewKey with 31 bytes = %v, want ErrBadSecret", err)
	}
}

// TestSecretsNeverPrint formats the ring, a key and a subject hasher with
// every verb and checks that no form of the secret appears.
func TestSecretsNeverPrint(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789ABCDEF") // printable, so %s would show it
	k := mustKey(t, 5, secret)
	ring := mustRing(t, k, mustKey(t, 6, secret2))
	hasher, err := NewSubjectHasher(secret)
	if err != nil {
		t.Fatal(err)
	}
	forms := []string{string(secret[:8]), hex.EncodeToString(secret[:4]), fmt.Sprint(secret[:4])[1:8], fmt.Sprintf("%#v", secret[:2])[8:]}
	for _, v := range []any{ring, k, *k, hasher, *hasher, []any{ring, k}, struct{ K *Key }{k}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			out := fmt.Sprintf(verb, v)
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Fatalf("fmt %s of %T shows %q: %s", verb, v, f, out)
				}
			}
		}
	}
	if got := ring.String(); got != "entrypass.KeyRing(sign 5; verify 5,6)" {
		t.Errorf("ring.String() = %q", got)
	}
	if got := fmt.Sprint(k); got != "entrypass.Key(5)" {
		t.Errorf("key prints as %q", got)
	}
}

// TestVerifyConcurrent verifies passes of two keys from several goroutines,
// so pooled HMAC states are reused across keys and calls (run with -race).
func TestVerifyConcurrent(t *testing.T) {
	k1, k2 := mustKey(t, 1, secret1), mustKey(t, 2, secret2)
	ring := mustRing(t, k2, k1)
	texts := []string{mustEncode(t, k1, testClaims(), testNonce), mustEncode(t, k2, testClaims(), testNonce)}
	forged := mustEncode(t, mustKey(t, 2, secret1), testClaims(), testNonce)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, err := ring.Verify(texts[(g+i)%2], testScope, testNow); err != nil {
					errs <- err
					return
				}
				if _, err := ring.Verify(forged, testScope, testNow); !errors.Is(err, ErrBadMAC) {
					errs <- fmt.Errorf("forged pass: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Encode reuses a key's HMAC states and buffers from a pool: passes minted
// by many goroutines at once are the ones minted one by one, and a Key not
// made by NewKey signs nothing.
func TestEncodeConcurrentlyAndZeroKey(t *testing.T) {
	k := mustKey(t, 1, secret1)
	want := make([]string, 64)
	nonces := make([]Nonce, len(want))
	for i := range want {
		nonces[i] = Nonce{byte(i), 7}
		want[i] = mustEncode(t, k, testClaims(), nonces[i])
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				for i, nonce := range nonces {
					if got, err := Encode(k, testClaims(), nonce); err != nil || got != want[i] {
						t.Errorf("goroutine %d: pass %d = %q, %v; want %q", g, i, got, err, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if _, err := Encode(&Key{}, testClaims(), testNonce); !errors.Is(err, ErrBadSecret) {
		t.Errorf("Encode with a zero Key: %v, want ErrBadSecret", err)
	}
}
