package entrypass

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Mint draws a nonce from random (crypto/rand.Reader in production: a
// repeated nonce repeats the request_id, and the second pass would get the
// first one's answer) and returns Encode's text and the pass it encodes.
// Errors wrap ErrBadClaims or the reader's error.
func Mint(k *Key, c Claims, random io.Reader) (string, Pass, error) {
	var nonce Nonce
	if _, err := io.ReadFull(random, nonce[:]); err != nil {
		return "", Pass{}, fmt.Errorf("entrypass: reading the nonce: %w", err)
	}
	text, err := Encode(k, c, nonce)
	if err != nil {
		return "", Pass{}, err
	}
	return text, Pass{Claims: c, KeyID: k.id, Nonce: nonce}, nil
}

// Encode returns the pass text for the claims signed by k with the given
// nonce, laid out as the package doc says. It is deterministic (the test
// vectors rely on it); Mint is the way to get a fresh nonce. Errors wrap
// ErrBadClaims, or are ErrBadSecret for a Key not made by NewKey. Safe for
// concurrent use: the key's pool lends each call its HMAC state (keyed
// once, Reset after) and buffers, so a pass costs two allocations.
func Encode(k *Key, c Claims, nonce Nonce) (string, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	if k == nil || k.encoders == nil {
		return "", ErrBadSecret // not made by NewKey: no secret
	}
	s := k.encoders.Get().(*encodeScratch)
	defer k.encoders.Put(s)
	payload := appendPayload(s.raw[:0], k.id, c, nonce)
	s.mac.Reset()
	s.mac.Write([]byte(Domain))
	s.mac.Write(payload)
	return string(encoding.AppendEncode(s.text[:0], s.mac.Sum(payload))), nil
}

// appendPayload appends the payload of the layout to b. The claims must be
// valid.
func appendPayload(b []byte, keyID uint8, c Claims, nonce Nonce) []byte {
	b = append(b, Version, keyID)
	for _, id := range [...]string{c.CampaignID, c.SKUID, c.UserID} {
		b = append(b, byte(len(id)))
		b = append(b, id...)
	}
	b = append(b, c.Tier, c.Risk, c.Subjects.present)
	for kind := SubjectKind(0); kind < SubjectKindCount; kind++ {
		if key, ok := c.Subjects.Get(kind); ok {
			b = append(b, key[:]...)
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(c.NotBeforeMs))
	b = binary.BigEndian.AppendUint64(b, uint64(c.ExpiresAtMs))
	return append(b, nonce[:]...)
}
