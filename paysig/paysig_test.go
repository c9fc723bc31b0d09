package paysig_test

import (
	"testing"

	"github.com/seckill/seckill/paysig"
)

// HMAC-SHA256's published example, and Verify's refusals.
func TestSignAndVerify(t *testing.T) {
	secret, body := []byte("key"), []byte("The quick brown fox jumps over the lazy dog")
	const want = "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
	if got := paysig.Sign(secret, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if !paysig.Verify(secret, body, []byte(want)) {
		t.Fatal("Verify refused its own signature")
	}
	for _, header := range []string{"", want[:62], want + "00", "zz" + want[2:], "00" + want[2:]} {
		if paysig.Verify(secret, body, []byte(header)) {
			t.Errorf("Verify took %q", header)
		}
	}
	if paysig.Verify([]byte("other"), body, []byte(want)) || paysig.Verify(secret, append(body, '.'), []byte(want)) {
		t.Error("Verify took another secret's or body's signature")
	}
}
