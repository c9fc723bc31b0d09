package lottery

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
)

// Entry is one line of the pool: an entry's sequence number (from 1, in the
// order entries were recorded), its pseudonym and its tier (0 without an
// entry pass).
type Entry struct {
	Seq       uint32
	Pseudonym Hash
	Tier      uint8
}

// MaxLineSize is the longest pool line: 10 digits, 64 hex digits, 3 digits,
// two commas and the newline.
const MaxLineSize = 10 + 1 + 2*Size + 1 + 3 + 1

// AppendLine appends the canonical pool line of e:
// decimal(seq) "," hex(pseudonym) "," decimal(tier) "\n".
func AppendLine(dst []byte, e Entry) []byte {
	dst = strconv.AppendUint(dst, uint64(e.Seq), 10)
	dst = append(dst, ',')
	dst = hex.AppendEncode(dst, e.Pseudonym[:])
	dst = append(dst, ',')
	dst = strconv.AppendUint(dst, uint64(e.Tier), 10)
	return append(dst, '\n')
}

// Rooter computes entries_root line by line, so a pool of any size is
// hashed without holding its text. Add entries in ascending seq order.
type Rooter struct {
	h     hash.Hash
	buf   [MaxLineSize]byte
	count uint32
}

// NewRooter returns an empty Rooter.
func NewRooter() *Rooter { return &Rooter{h: sha256.New()} }

// Add hashes e's line.
func (r *Rooter) Add(e Entry) {
	r.h.Write(AppendLine(r.buf[:0], e))
	r.count++
}

// Count returns the number of entries added.
func (r *Rooter) Count() uint32 { return r.count }

// Root returns entries_root of the lines added so far.
func (r *Rooter) Root() Hash {
	var s Hash
	r.h.Sum(s[:0])
	return s
}

// EntriesRoot returns SHA-256 of the canonical lines of entries, which must
// be in ascending seq order.
func EntriesRoot(entries []Entry) Hash {
	r := NewRooter()
	for _, e := range entries {
		r.Add(e)
	}
	return r.Root()
}

// ErrBadPool is wrapped by ParsePool for a pool text that is not canonical.
var ErrBadPool = errors.New("pool is not canonical")

// ParsePool reads a canonical pool (the bytes entries_root hashes). It is
// strict: every line must be exactly what AppendLine writes, seqs must run
// 1, 2, 3, … and the text must end with a newline (or be empty). Any other
// byte wraps ErrBadPool with the line number, so a pool that parses hashes
// to the same root as the entries it returns.
func ParsePool(text []byte) ([]Entry, error) {
	var out []Entry
	for line := 1; len(text) > 0; line++ {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			return nil, fmt.Errorf("%w: line %d has no newline", ErrBadPool, line)
		}
		e, err := parseLine(text[:i])
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadPool, line, err)
		}
		if e.Seq != uint32(line) {
			return nil, fmt.Errorf("%w: line %d has entry_seq %d", ErrBadPool, line, e.Seq)
		}
		out = append(out, e)
		text = text[i+1:]
	}
	return out, nil
}

func parseLine(b []byte) (Entry, error) {
	parts := bytes.Split(b, []byte{','})
	if len(parts) != 3 {
		return Entry{}, errors.New("want 3 fields")
	}
	seq, err := canonicalUint(parts[0], 32)
	if err != nil || seq == 0 {
		return Entry{}, fmt.Errorf("entry_seq %q", parts[0])
	}
	var e Entry
	e.Seq = uint32(seq)
	p := parts[1]
	if len(p) != 2*Size || !isLowerHex(p) {
		return Entry{}, errors.New("pseudonym must be 64 lowercase hex digits")
	}
	hex.Decode(e.Pseudonym[:], p)
	tier, err := canonicalUint(parts[2], 8)
	if err != nil {
		return Entry{}, fmt.Errorf("tier %q", parts[2])
	}
	e.Tier = uint8(tier)
	return e, nil
}

// canonicalUint parses a shortest decimal form: digits only, no leading zero.
func canonicalUint(b []byte, bits int) (uint64, error) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, errors.New("not canonical")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a digit")
		}
	}
	return strconv.ParseUint(string(b), 10, bits)
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
