package entrypass

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// Key is one signing key: an id (the pass's key_id byte) and a secret of
// MinSecretSize..MaxSecretSize bytes. A Key never prints its secret.
type Key struct {
	id     uint8
	secret []byte
	// encoders pools *encodeScratch for Encode: a keyed HMAC-SHA256 state
	// that Reset brings back to the keyed state without the key schedule
	// and the allocations of hmac.New, and the buffers. A pointer, so a
	// Key stays copyable.
	encoders *sync.Pool
}

// encodeScratch is one Encode call's working memory.
type encodeScratch struct {
	mac  hash.Hash
	raw  [MaxPassSize]byte
	text [MaxTextLength]byte
}

// NewKey returns a key with a copy of secret (ErrBadSecret unless it is
// MinSecretSize..MaxSecretSize bytes).
func NewKey(id uint8, secret []byte) (*Key, error) {
	if len(secret) < MinSecretSize || len(secret) > MaxSecretSize {
		return nil, ErrBadSecret
	}
	k := &Key{id: id, secret: append([]byte(nil), secret...)}
	k.encoders = &sync.Pool{New: func() any { return &encodeScratch{mac: hmac.New(sha256.New, k.secret)} }}
	return k, nil
}

// ID returns the key's id.
func (k Key) ID() uint8 { return k.id }

// String shows the id only, e.g. "entrypass.Key(3)".
func (k Key) String() string { return "entrypass.Key(" + strconv.Itoa(int(k.id)) + ")" }

// Format shows the id only, whatever the verb.
func (k Key) Format(f fmt.State, _ rune) { fmt.Fprint(f, k.String()) }

// KeyRing is the ordered set of keys a verifier accepts: the first signs,
// all verify. Rotation: add the new key at the end, deploy to every
// verifier, move it to the front (issuers now sign with it), and drop the
// old key once its last pass has expired (MaxLifetimeMs at most, the
// campaign's ttl in practice). Ids are unique, so a ring holds at most 256
// keys. A KeyRing is safe for concurrent use and never prints secrets.
type KeyRing struct {
	keys []*Key
	// scratch pools *verifyScratch: decode buffers and one keyed HMAC state
	// per key, so Verify allocates nothing.
	scratch sync.Pool
}

// verifyScratch is one Verify call's working memory.
type verifyScratch struct {
	text [MaxTextLength]byte
	raw  [MaxPassSize]byte
	sum  [MACSize]byte
	macs []hash.Hash // indexed like KeyRing.keys, created on first use
}

// ErrBadKeyRing is wrapped by ParseKeyRing and NewKeyRing; the message
// names the entry and the rule, never the secret.
var ErrBadKeyRing = errors.New("entrypass: bad key ring")

// NewKeyRing returns a ring of the keys, the first of which signs. It
// needs at least one key and unique ids.
func NewKeyRing(keys ...*Key) (*KeyRing, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrBadKeyRing)
	}
	var seen [256]bool
	for _, k := range keys {
		if seen[k.id] {
			return nil, fmt.Errorf("%w: key id %d appears twice", ErrBadKeyRing, k.id)
		}
		seen[k.id] = true
	}
	r := &KeyRing{keys: append([]*Key(nil), keys...)}
	r.scratch.New = func() any { return &verifyScratch{macs: make([]hash.Hash, len(r.keys))} }
	return r, nil
}

// ParseKeyRing parses the --entry-pass-keys form "kid:hex,kid:hex,...":
// kid is a decimal key id 0-255, hex the secret of 32-64 bytes
// (MinSecretSize to MaxSecretSize), so 64-128 hex digits, as
// `openssl rand -hex 32` prints.
// Spaces around entries are ignored. The first key signs.
func ParseKeyRing(s string) (*KeyRing, error) {
	var keys []*Key
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		idText, secretHex, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d is not kid:hex", ErrBadKeyRing, i+1)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 8)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: key id must be a decimal 0-255", ErrBadKeyRing, i+1)
		}
		// hex's own errors quote the offending character: not in ours.
		secret, err := hex.DecodeString(strings.TrimSpace(secretHex))
		if err != nil {
			return nil, fmt.Errorf("%w: key id %d: the secret is not an even number of hex digits", ErrBadKeyRing, id)
		}
		k, err := NewKey(uint8(id), secret)
		if err != nil {
			return nil, fmt.Errorf("%w: key id %d: the secret is %d bytes, need %d-%d",
				ErrBadKeyRing, id, len(secret), MinSecretSize, MaxSecretSize)
		}
		keys = append(keys, k)
	}
	return NewKeyRing(keys...)
}

// Signer returns the key that signs: the first.
func (r *KeyRing) Signer() *Key { return r.keys[0] }

// IDs returns the key ids in ring order.
func (r *KeyRing) IDs() []uint8 {
	ids := make([]uint8, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// String shows the ids only, signer first, e.g. "entrypass.KeyRing(sign 2; verify 2,1)".
func (r *KeyRing) String() string {
	var b strings.Builder
	b.WriteString("entrypass.KeyRing(sign ")
	b.WriteString(strconv.Itoa(int(r.keys[0].id)))
	b.WriteString("; verify ")
	for i, k := range r.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(k.id)))
	}
	b.WriteByte(')')
	return b.String()
}

// Format shows what String shows, whatever the verb.
func (r *KeyRing) Format(f fmt.State, _ rune) { fmt.Fprint(f, r.String()) }

// find returns the index of the key with the id, or -1.
func (r *KeyRing) find(id uint8) int {
	for i, k := range r.keys {
		if k.id == id {
			return i
		}
	}
	return -1
}

// mac returns scratch's keyed HMAC state for key index i, reset.
func (s *verifyScratch) mac(r *KeyRing, i int) hash.Hash {
	if s.macs[i] == nil {
		s.macs[i] = hmac.New(sha256.New, r.keys[i].secret)
		return s.macs[i]
	}
	s.macs[i].Reset()
	return s.macs[i]
}
