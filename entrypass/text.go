package entrypass

// The pass text's alphabet and its two hand-written codecs: the decoder of
// a whole pass (Verify) and the encoder of a nonce (RequestID). Both are on
// the path of every reserve with a pass; encoding/base64's general code
// (8-character blocks, '\r' and '\n' skipped, padding handled) costs about
// twice their instructions there (README "The single-request path").
// TestDecodeTextAgrees and FuzzDecodeText hold decodeText to encoding's
// Decode; TestRequestIDAgrees holds RequestID to encoding's Encode.

// alphabet is base64url (RFC 4648 §5): the value of alphabet[i] is i.
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// invalidChar marks a byte outside alphabet in decodeMap. Every valid value
// is below 64, so a block whose OR has bit 6 or 7 set held one.
const invalidChar = 0xff

// decodeMap is alphabet's inverse: the value of each byte, invalidChar for
// the bytes outside it.
var decodeMap = func() (m [256]byte) {
	for i := range m {
		m[i] = invalidChar
	}
	for i := 0; i < len(alphabet); i++ {
		m[alphabet[i]] = byte(i)
	}
	return m
}()

// decodeText decodes src, base64url without padding, into dst, which must
// be exactly the decoded length (len(src)*6/8). It accepts only canonical
// text, as encoding (strict) does with a count check: every character in
// alphabet (no padding, no '\r' or '\n'), len(src)%4 != 1, and the unused
// low bits of a last partial block zero. It reports false otherwise (dst
// then holds garbage). Validity is checked once, after the loop, so the
// loop has no branch on the text.
func decodeText(dst, src []byte) bool {
	if len(src)%4 == 1 || len(dst) != len(src)*6/8 {
		return false
	}
	var seen byte   // OR of every value: bit 6 or 7 set if any was invalidChar
	var unused byte // the unused low bits of a last partial block
	for len(src) >= 4 && len(dst) >= 3 {
		a, b, c, d := decodeMap[src[0]], decodeMap[src[1]], decodeMap[src[2]], decodeMap[src[3]]
		seen |= a | b | c | d
		v := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		dst[0], dst[1], dst[2] = byte(v>>16), byte(v>>8), byte(v)
		src, dst = src[4:], dst[3:]
	}
	switch len(src) {
	case 2: // 12 bits: one byte and 4 unused bits
		if len(dst) != 1 {
			return false
		}
		a, b := decodeMap[src[0]], decodeMap[src[1]]
		seen |= a | b
		unused = b & 0x0f
		dst[0] = a<<2 | b>>4
	case 3: // 18 bits: two bytes and 2 unused bits
		if len(dst) != 2 {
			return false
		}
		a, b, c := decodeMap[src[0]], decodeMap[src[1]], decodeMap[src[2]]
		seen |= a | b | c
		unused = c & 0x03
		v := uint32(a)<<12 | uint32(b)<<6 | uint32(c)
		dst[0], dst[1] = byte(v>>10), byte(v>>2)
	}
	return seen&0xc0 == 0 && unused == 0
}

// encodeNonce writes the 22 base64url characters (no padding) of a nonce
// to dst: five blocks of three bytes, then one byte in two characters.
func encodeNonce(dst *[nonceTextLength]byte, nonce *Nonce) {
	for i := 0; i < 5; i++ {
		v := uint32(nonce[3*i])<<16 | uint32(nonce[3*i+1])<<8 | uint32(nonce[3*i+2])
		dst[4*i] = alphabet[v>>18&0x3f]
		dst[4*i+1] = alphabet[v>>12&0x3f]
		dst[4*i+2] = alphabet[v>>6&0x3f]
		dst[4*i+3] = alphabet[v&0x3f]
	}
	last := nonce[NonceSize-1]
	dst[20] = alphabet[last>>2]
	dst[21] = alphabet[last<<4&0x3f]
}
