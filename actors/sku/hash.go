package sku

import "crypto/sha256"

// Hash returns the SHA-256 of the state's canonical encoding (the snapshot
// state format, see Frozen.Encode): definition, pause flag, clock, token
// release order, every reservation with its payment and close details,
// rejections and refunds. Two Machines with equal hashes answer every
// future command alike. Derived indexes and counters are not encoded; Audit
// checks them.
func (m *Machine) Hash() [32]byte {
	h := sha256.New()
	if _, err := m.Freeze().Encode(h); err != nil {
		panic("sku: encoding into a hash cannot fail: " + err.Error())
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
