package sku

import (
	"encoding/binary"
	"fmt"
)

// Caps on unpaid reservations per subject (max_unpaid_per_subject). A reserve made with
// an entry pass carries its Holder; the Machine counts, per subject key,
// the PENDING_PAYMENT reservations whose holder carries it, and refuses a
// reserve that would take a key past Definition.MaxUnpaidPerSubject. On a
// lottery SKU the entries are counted and capped instead (overEntryCap),
// and a winner's reservation carries its entry's holder. The
// counts are derived state: Apply keeps them, and replay and DecodeState
// rebuild them from the holders. They hold at most SubjectKindCount entries
// per PENDING_PAYMENT reservation, so at most 4 × sale_limit.

// subjectCounts counts something (unpaid reservations, a lottery's
// entries) per subject key, one map per kind: kinds are kept apart, so a
// device and a network whose keys happen to be equal are two subjects. A
// key is its 8 bytes as a uint64, so the maps take Go's fast path for
// 8-byte keys (a reserve with a pass looks one up and inserts one).
type subjectCounts [SubjectKindCount]map[uint64]uint32

func newSubjectCounts() (c subjectCounts) {
	for k := range c {
		c[k] = make(map[uint64]uint32)
	}
	return c
}

// slot is the map key of a subject key.
func slot(key *SubjectKey) uint64 { return binary.LittleEndian.Uint64(key[:]) }

// size is the number of subject keys counted, all kinds together.
func (c *subjectCounts) size() int {
	n := 0
	for _, m := range c {
		n += len(m)
	}
	return n
}

// atLimit reports whether one of h's subject keys already counts limit
// (0: no limit).
func (c *subjectCounts) atLimit(h *Holder, limit uint32) bool {
	if limit == 0 || h.Subjects == 0 {
		return false
	}
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) != 0 && c[k][slot(&h.Keys[k])] >= limit {
			return true
		}
	}
	return false
}

// add counts one more for each subject key of h.
func (c *subjectCounts) add(h *Holder) {
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) != 0 {
			c[k][slot(&h.Keys[k])]++
		}
	}
}

// remove counts one less for each subject key of h.
func (c *subjectCounts) remove(h *Holder) {
	for k := 0; k < SubjectKindCount; k++ {
		if h.Subjects&(1<<k) == 0 {
			continue
		}
		counts, s := c[k], slot(&h.Keys[k])
		switch n := counts[s]; n {
		case 0:
			panic("sku: count of a subject goes below zero")
		case 1:
			delete(counts, s)
		default:
			counts[s] = n - 1
		}
	}
}

// equal reports whether c and o count the same keys alike, naming the
// first difference otherwise (for the audit).
func (c *subjectCounts) equal(o *subjectCounts) (string, bool) {
	if c.size() != o.size() {
		return fmt.Sprintf("%d subject keys, recount %d", c.size(), o.size()), false
	}
	for k, counts := range o {
		for s, n := range counts {
			if c[k][s] != n {
				return fmt.Sprintf("a %d-kind subject key counts %d, recount %d", k, c[k][s], n), false
			}
		}
	}
	return "", true
}

// overCap reports whether one of h's subject keys already has
// MaxUnpaidPerSubject unpaid reservations.
func (m *Machine) overCap(h *Holder) bool {
	return m.unpaid.atLimit(h, m.def.MaxUnpaidPerSubject)
}

// overEntryCap is overCap for a lottery SKU's entry: whether one of h's
// subject keys already has MaxUnpaidPerSubject entries. Every entry may win
// at the draw, and every winner gets an unpaid reservation then, so
// capping the entries per key caps the unpaid winners per key, with the
// draw and its evidence unchanged. An entry never leaves the count: the
// pool is fixed once recorded.
func (m *Machine) overEntryCap(h *Holder) bool {
	return m.lot.subjects.atLimit(h, m.def.MaxUnpaidPerSubject)
}

// countUnpaid adds one unpaid reservation to each subject key of h.
func (m *Machine) countUnpaid(h *Holder) { m.unpaid.add(h) }

// settleUnpaid takes reservation seq, leaving PENDING_PAYMENT, out of the
// counts of its holder's subject keys.
func (m *Machine) settleUnpaid(seq uint32) {
	if len(m.holders.rows) == 0 {
		return
	}
	h := m.holders.get(seq)
	m.unpaid.remove(&h)
}

// UnpaidBySubject returns the number of unpaid reservations of the subject
// key of kind k (0..SubjectKindCount-1): what the cap is compared with.
func (m *Machine) UnpaidBySubject(kind int, key SubjectKey) uint32 {
	if kind < 0 || kind >= SubjectKindCount {
		return 0
	}
	return m.unpaid[kind][slot(&key)]
}

// shortWindow reports whether a reservation by h gets a payment window
// shorter than payment_window: it then goes on the high-risk expiry queue.
func (m *Machine) shortWindow(h *Holder) bool {
	return m.def.PaymentWindowFor(*h) != m.def.PaymentWindowMs
}

// queueHighRisk puts reservation seq on the high-risk expiry queue,
// dropping the settled prefix once it is most of the queue (so the queue
// holds about twice the high-risk reservations not yet walked past).
func (m *Machine) queueHighRisk(seq uint32) {
	if m.riskCursor >= 1024 && 2*m.riskCursor >= len(m.highRisk) {
		n := copy(m.highRisk, m.highRisk[m.riskCursor:])
		m.highRisk, m.riskCursor = m.highRisk[:n], 0
	}
	m.highRisk = append(m.highRisk, seq)
}

// expireHighRisk closes the due PENDING_PAYMENT reservations of the
// high-risk queue, oldest first, looking at no more than 4*max of them and
// closing at most max. Their window is shorter than payment_window, so
// their expire_at grows with seq among themselves but not among all rows:
// the main walk (Expire) would stop at an earlier normal reservation not
// yet due, and this one goes on past it.
func (m *Machine) expireHighRisk(at int64, max int, out []Record) ([]Record, int) {
	closed, looked := 0, 0
	for closed < max && looked < 4*max && m.riskCursor < len(m.highRisk) {
		seq := m.highRisk[m.riskCursor]
		looked++
		if r := m.table.get(seq); r.state == StatePendingPayment {
			if m.table.expireAt(seq) > at {
				break
			}
			out = m.closeExpired(at, seq, out)
			closed++
		}
		m.riskCursor++
	}
	return out, closed
}

// nextHighRiskExpiry is NextExpiry for the high-risk queue.
func (m *Machine) nextHighRiskExpiry() (int64, bool) {
	for i := m.riskCursor; i < len(m.highRisk); i++ {
		if r := m.table.get(m.highRisk[i]); r.state == StatePendingPayment {
			return m.table.expireAt(m.highRisk[i]), true
		}
		if i-m.riskCursor > 4096 {
			return 0, true // many settled rows: let Expire advance the cursor
		}
	}
	return 0, false
}
