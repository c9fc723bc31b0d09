package sku

import (
	"errors"
	"fmt"
)

// SubjectKindCount is the number of subject kinds a Holder may carry: one
// key each of device, payment account, address and network (bit k of
// Holder.Subjects, in the order of package entrypass's layout).
const SubjectKindCount = 4

// SubjectKeySize is the size of one subject key in bytes: an issuer's keyed
// hash of a device id, payment account, address or network.
const SubjectKeySize = 8

// SubjectKey is one subject key (entrypass.SubjectKey's bytes).
type SubjectKey [SubjectKeySize]byte

// Holder is what an entry pass says about who asks for a reservation, as
// the RESERVED record keeps it: the tier and risk level the issuer gave, and
// up to SubjectKindCount subject keys, on which the SKU counts unpaid
// reservations (Definition.MaxUnpaidPerSubject). The zero Holder is a
// reserve without a pass. A Holder is canonical: the key of a kind whose bit
// is clear is zero, so two equal holders compare equal.
type Holder struct {
	Tier     uint8 // opaque to the SKU
	Risk     uint8 // 0 normal; >= 1 high risk: the high-risk payment window
	Subjects uint8 // presence flags: bit k set means Keys[k] is present; bits 4-7 are zero
	Keys     [SubjectKindCount]SubjectKey
}

// ErrBadHolder is returned by Holder.Validate.
var ErrBadHolder = errors.New("malformed holder")

// Validate checks the presence flags and that absent keys are zero.
func (h Holder) Validate() error {
	if h.Subjects>>SubjectKindCount != 0 {
		return fmt.Errorf("%w: subject flags %#02x", ErrBadHolder, h.Subjects)
	}
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) == 0 && h.Keys[k] != (SubjectKey{}) {
			return fmt.Errorf("%w: key of absent subject %d is not zero", ErrBadHolder, k)
		}
	}
	return nil
}

// empty reports whether h, a valid Holder (Validate), is the zero one: a
// valid holder's absent keys are zero, so its three flags say it, and a
// reserve without a pass (most of them) compares three bytes, not the 64
// of its keys.
func (h *Holder) empty() bool { return h.Tier == 0 && h.Risk == 0 && h.Subjects == 0 }

// HighRisk reports whether the holder gets the high-risk payment window.
func (h Holder) HighRisk() bool { return h.Risk >= 1 }

// Key returns the key of subject kind k and whether it is present.
func (h Holder) Key(k int) (SubjectKey, bool) {
	if k < 0 || k >= SubjectKindCount || h.Subjects&(1<<k) == 0 {
		return SubjectKey{}, false
	}
	return h.Keys[k], true
}

// appendHolder appends tier, risk, flags and the present keys in bit order:
// 3 to 35 bytes, the layout of the RESERVED record's trailing field and of
// the state's holder rows.
func appendHolder(b []byte, h *Holder) []byte {
	return appendPassSubjects(append(b, h.Tier), h)
}

// passSubjects reports whether h carries more than a tier: a risk level or
// a subject key. Only then does an ENTERED record (whose tier is a field of
// its own) write appendPassSubjects's group.
func (h *Holder) passSubjects() bool { return h.Risk != 0 || h.Subjects != 0 }

// appendPassSubjects appends risk, flags and the present keys in bit order:
// appendHolder's layout after the tier, 2 to 34 bytes.
func appendPassSubjects(b []byte, h *Holder) []byte {
	b = append(b, h.Risk, h.Subjects)
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) != 0 {
			b = append(b, h.Keys[k][:]...)
		}
	}
	return b
}

// holder reads what appendHolder wrote.
func (d *decoder) holder() Holder {
	return d.passSubjects(d.byte())
}

// passSubjects reads what appendPassSubjects wrote, into a Holder of tier.
func (d *decoder) passSubjects(tier uint8) Holder {
	h := Holder{Tier: tier}
	h.Risk, h.Subjects = d.byte(), d.byte()
	if d.err != nil {
		return Holder{}
	}
	if h.Subjects>>SubjectKindCount != 0 {
		d.err = fmt.Errorf("subject flags %#02x", h.Subjects)
		return Holder{}
	}
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) == 0 {
			continue
		}
		if len(d.b) < SubjectKeySize {
			d.err = errShort
			return Holder{}
		}
		copy(h.Keys[k][:], d.b)
		d.b = d.b[SubjectKeySize:]
	}
	return h
}

// holderRow is the holder of reservation seq: rows are appended in seq
// order, never changed, and hold no pointer.
type holderRow struct {
	seq uint32
	h   Holder
}

// holderList is the holders of the reservations made with one, in seq
// order. It is append-only: a frozen state shares it by length.
type holderList struct {
	rows []holderRow
}

// add appends the holder of seq, which is larger than every seq before.
func (l *holderList) add(seq uint32, h Holder) {
	l.rows = append(l.rows, holderRow{seq: seq, h: h})
}

// get returns the holder of seq, the zero Holder when it has none. It
// searches by seq: O(log n).
func (l *holderList) get(seq uint32) Holder {
	lo, hi := 0, len(l.rows)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.rows[mid].seq < seq {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(l.rows) && l.rows[lo].seq == seq {
		return l.rows[lo].h
	}
	return Holder{}
}

// freeze returns a read-only view of the rows so far.
func (l *holderList) freeze() holderList {
	return holderList{rows: l.rows[:len(l.rows):len(l.rows)]}
}
