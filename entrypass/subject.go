package entrypass

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// SubjectKind names what a subject key stands for. Its value is the bit
// number of its presence flag in the layout, and the order of its key.
type SubjectKind uint8

// The four subject kinds, frozen by the layout.
const (
	SubjectDevice         SubjectKind = 0 // a device id or fingerprint
	SubjectPaymentAccount SubjectKind = 1 // a card, wallet or bank account
	SubjectAddress        SubjectKind = 2 // a delivery address, normalised by the issuer
	SubjectNetwork        SubjectKind = 3 // a network, e.g. an IPv4 /24 or IPv6 /48 prefix

	// SubjectKindCount is the number of subject kinds; a pass carries at
	// most one key of each.
	SubjectKindCount = 4
)

// SubjectDomain prefixes every subject hash, so a subject key never equals
// a MAC made for another purpose with the same secret.
const SubjectDomain = "seckill/entry-pass/subject/v1\x00"

// subjectNames are the JSON names of the kinds, indexed by kind.
var subjectNames = [SubjectKindCount]string{"device", "payment_account", "address", "network"}

// String returns the kind's JSON name ("device", "payment_account",
// "address", "network"), or "subject(N)" for a value out of range.
func (k SubjectKind) String() string {
	if k < SubjectKindCount {
		return subjectNames[k]
	}
	return fmt.Sprintf("subject(%d)", uint8(k))
}

// ParseSubjectKind returns the kind with the JSON name, and false for any
// other name.
func ParseSubjectKind(name string) (SubjectKind, bool) {
	for k, n := range subjectNames {
		if n == name {
			return SubjectKind(k), true
		}
	}
	return 0, false
}

// SubjectKey is the issuer's keyed 8-byte hash of one subject value.
type SubjectKey [SubjectKeySize]byte

// Subjects holds up to one key per SubjectKind. The zero value holds none.
type Subjects struct {
	present uint8 // bit k set: keys[k] is present
	keys    [SubjectKindCount]SubjectKey
}

// Set stores the key for kind, replacing any earlier one. A kind out of
// range is a programming error and panics.
func (s *Subjects) Set(kind SubjectKind, key SubjectKey) {
	if kind >= SubjectKindCount {
		panic(fmt.Sprintf("entrypass: Subjects.Set with %v", kind))
	}
	s.present |= 1 << kind
	s.keys[kind] = key
}

// Get returns the key for kind and whether the pass carries one.
func (s Subjects) Get(kind SubjectKind) (SubjectKey, bool) {
	if kind >= SubjectKindCount || s.present&(1<<kind) == 0 {
		return SubjectKey{}, false
	}
	return s.keys[kind], true
}

// Count returns how many subject keys are present (0..SubjectKindCount).
func (s Subjects) Count() int {
	n := 0
	for k := SubjectKind(0); k < SubjectKindCount; k++ {
		if s.present&(1<<k) != 0 {
			n++
		}
	}
	return n
}

// Bounds of every secret, signing key or subject secret, in bytes: at
// least SHA-256's output, at most its block size (HMAC hashes a longer key
// first; nothing is gained).
const (
	MinSecretSize = 32
	MaxSecretSize = 64
)

// ErrBadSecret is returned for a secret outside MinSecretSize..MaxSecretSize
// bytes, signing key or subject secret.
var ErrBadSecret = errors.New("entrypass: secret must be 32-64 bytes")

// SubjectHasher turns subject values into subject keys. All issuers of one
// deployment share its secret; it prints as "entrypass.SubjectHasher" only.
type SubjectHasher struct {
	secret []byte
}

// NewSubjectHasher returns a hasher keyed by a copy of secret, which must be
// MinSecretSize..MaxSecretSize bytes (ErrBadSecret otherwise).
func NewSubjectHasher(secret []byte) (*SubjectHasher, error) {
	if len(secret) < MinSecretSize || len(secret) > MaxSecretSize {
		return nil, ErrBadSecret
	}
	return &SubjectHasher{secret: append([]byte(nil), secret...)}, nil
}

// Hash returns the first 8 bytes of HMAC-SHA256(secret, SubjectDomain ‖
// byte(kind) ‖ value). The value is hashed as given: normalising it (case,
// spacing, an IP address to its prefix) is the issuer's job, done the same
// way by every issuer. The HTTP layer bounds the value's length.
func (h *SubjectHasher) Hash(kind SubjectKind, value string) SubjectKey {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(SubjectDomain))
	m.Write([]byte{byte(kind)})
	m.Write([]byte(value))
	var sum [sha256.Size]byte
	var key SubjectKey
	copy(key[:], m.Sum(sum[:0]))
	return key
}

// String never shows the secret (value receiver: a copied hasher prints
// the same).
func (SubjectHasher) String() string { return "entrypass.SubjectHasher" }

// Format never shows the secret, whatever the verb.
func (h SubjectHasher) Format(f fmt.State, _ rune) { fmt.Fprint(f, h.String()) }
