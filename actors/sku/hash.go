package sku

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Hash returns a canonical SHA-256 of the state: definition, pause flag,
// clock, token slots and release order, every reservation and its payment
// details, rejections (sorted by request_id) and refunds. Two Machines with
// equal hashes answer every future command alike. Derived indexes are not
// hashed; Audit checks them.
func (m *Machine) Hash() [32]byte {
	h := sha256.New()
	var b []byte
	flush := func() {
		h.Write(b)
		b = b[:0]
	}
	d := m.def
	b = appendString(b, d.CampaignID)
	b = appendString(b, d.SKUID)
	b = binary.AppendVarint(b, d.StartAt)
	b = binary.AppendVarint(b, d.EndAt)
	b = binary.AppendVarint(b, d.PaymentWindowMs)
	b = binary.AppendUvarint(b, uint64(d.SaleLimit))
	b = appendBool(b, d.ReleaseOnClose)
	b = appendBool(b, m.defined)
	b = appendBool(b, m.paused)
	b = binary.AppendVarint(b, m.lastAt)
	b = binary.AppendUvarint(b, uint64(len(m.pool.slots)))
	for _, s := range m.pool.slots {
		b = binary.AppendUvarint(b, uint64(s))
	}
	b = binary.AppendUvarint(b, uint64(len(m.pool.released)-m.pool.releasedHead))
	for _, t := range m.pool.released[m.pool.releasedHead:] {
		b = binary.AppendUvarint(b, uint64(t))
	}
	flush()
	b = binary.AppendUvarint(b, uint64(m.table.count))
	for seq := uint32(1); seq <= m.table.count; seq++ {
		r := m.table.get(seq)
		b = appendString(b, m.table.requestID(r))
		b = appendString(b, m.table.userID(r))
		b = binary.AppendVarint(b, r.createdAt)
		b = binary.AppendVarint(b, r.expireAt)
		b = binary.AppendUvarint(b, uint64(r.token))
		b = binary.AppendUvarint(b, uint64(r.version))
		b = append(b, byte(r.state), r.flags)
		if x := m.table.extra(r); x != nil {
			b = append(b, 1)
			b = appendString(b, x.paymentID)
			b = binary.AppendVarint(b, x.amount)
			b = binary.AppendVarint(b, x.paidAt)
			b = binary.AppendVarint(b, x.closedAt)
			b = binary.AppendUvarint(b, uint64(len(x.refundPayments)))
			for i, p := range x.refundPayments {
				b = appendString(b, p)
				b = binary.AppendVarint(b, x.refundAmounts[i])
			}
		} else {
			b = append(b, 0)
		}
		if len(b) > 1<<16 {
			flush()
		}
	}
	flush()
	ids := make([]string, 0, len(m.rejected))
	for id := range m.rejected {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rj, _ := m.rejection(id)
		b = appendString(b, id)
		b = appendString(b, rj.userID)
		b = append(b, byte(rj.outcome))
		b = binary.AppendUvarint(b, uint64(rj.seq))
	}
	for _, rf := range m.refunds {
		b = binary.AppendUvarint(b, uint64(rf.ReservationSeq))
		b = appendString(b, rf.PaymentID)
		b = binary.AppendVarint(b, rf.Amount)
		b = binary.AppendVarint(b, rf.At)
	}
	flush()
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
