package entrypass

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// decodeByEncoding is what Verify did before decodeText: encoding's Decode
// with the count check that refuses skipped '\r' and '\n'.
func decodeByEncoding(src []byte) ([]byte, bool) {
	dst := make([]byte, encoding.DecodedLen(len(src)))
	m, err := encoding.Decode(dst, src)
	return dst, err == nil && m == len(dst) && len(src)%4 != 1
}

// checkDecodeAgrees fails unless decodeText and encoding accept the same
// src, with the same bytes.
func checkDecodeAgrees(t *testing.T, src []byte) {
	t.Helper()
	want, wantOK := decodeByEncoding(src)
	got := make([]byte, len(src)*6/8)
	ok := decodeText(got, src)
	if ok != wantOK || ok && !bytes.Equal(got, want) {
		t.Fatalf("decodeText(%q) = %x, %v; encoding: %x, %v", src, got, ok, want, wantOK)
	}
}

// TestDecodeTextAgrees compares decodeText with encoding on every text of
// one to three characters over the alphabet and bytes around it (every
// last partial block, its unused bits and every invalid character), and on
// passes with one byte changed.
func TestDecodeTextAgrees(t *testing.T) {
	chars := []byte(alphabet + "=+/\r\n\x00\x80\xff.")
	for _, a := range chars {
		checkDecodeAgrees(t, []byte{a})
		for _, b := range chars {
			checkDecodeAgrees(t, []byte{a, b})
			checkDecodeAgrees(t, []byte{'Q', 'U', 'J', 'D', a, b})
			for _, c := range chars {
				checkDecodeAgrees(t, []byte{a, b, c})
				checkDecodeAgrees(t, []byte{a, b, c, 'A'})
			}
		}
	}
	text := []byte(mustEncode(t, mustKey(t, 1, secret1), testClaims(), testNonce))
	for i := range text {
		for _, c := range chars {
			changed := bytes.Clone(text)
			changed[i] = c
			checkDecodeAgrees(t, changed)
		}
	}
}

// FuzzDecodeText holds decodeText to encoding on arbitrary text.
func FuzzDecodeText(f *testing.F) {
	f.Add([]byte(mustEncode(f, mustKey(f, 1, secret1), testClaims(), testNonce)))
	f.Add([]byte("QUJD\nRA"))
	f.Add([]byte("QUJDRB"))
	f.Fuzz(func(t *testing.T, src []byte) { checkDecodeAgrees(t, src) })
}

// TestRequestIDAgrees holds RequestID to encoding's Encode of the nonce.
func TestRequestIDAgrees(t *testing.T) {
	for i := 0; i < 256; i++ {
		var n Nonce
		for j := range n {
			n[j] = byte(i*31 + j*97 + i*j)
		}
		n[NonceSize-1] = byte(i)
		want := RequestIDPrefix + base64.RawURLEncoding.EncodeToString(n[:])
		if got := RequestID(n); got != want {
			t.Fatalf("RequestID(%x) = %q, want %q", n, got, want)
		}
	}
}
