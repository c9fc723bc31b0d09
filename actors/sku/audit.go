package sku

import "fmt"

// MaxViolations bounds the violations one Audit reports.
const MaxViolations = 100

// Audit is the result of checking every invariant on live state.
type Audit struct {
	Counts     Counts
	Violations []string // empty when healthy; at most MaxViolations
}

// OK reports whether no invariant is violated.
func (a Audit) OK() bool { return len(a.Violations) == 0 }

// Audit recounts everything from the reservation table and the token slots
// and checks the invariants:
//   - sale_limit = available + reserved + confirmed, none negative;
//   - each token is held by at most one reservation, and a holder's token is
//     in the matching state (PENDING_PAYMENT or held CLOSED: RESERVED; PAID:
//     CONFIRMED); every PENDING_PAYMENT or PAID reservation holds a token;
//   - each user has at most one live (PENDING_PAYMENT or PAID) reservation;
//   - the indexes agree with the table;
//   - the unpaid counts per subject key agree with the holders of the
//     PENDING_PAYMENT reservations, and holders are in seq order.
//
// It is O(reservations + tokens) and allocates a bitmap of sale_limit bits.
func (m *Machine) Audit() Audit {
	a := Audit{Counts: m.Counts()}
	bad := func(format string, args ...any) {
		if len(a.Violations) < MaxViolations {
			a.Violations = append(a.Violations, fmt.Sprintf(format, args...))
		}
	}
	c := a.Counts
	if uint64(c.Available)+uint64(c.Reserved)+uint64(c.Confirmed) != uint64(c.SaleLimit) {
		bad("sale_limit %d != available %d + reserved %d + confirmed %d", c.SaleLimit, c.Available, c.Reserved, c.Confirmed)
	}
	if int(m.pool.saleLimit) < len(m.pool.slots) {
		bad("%d tokens handed out beyond sale_limit %d", len(m.pool.slots), m.pool.saleLimit)
	}

	var states [4]uint32
	var reserved, confirmed, heldClosed uint32
	held := make([]uint64, (len(m.pool.slots)+63)/64)
	liveUsers := make(map[string]uint32, m.live.len())
	for seq := uint32(1); seq <= m.table.count; seq++ {
		r := m.table.get(seq)
		if r.state < StatePendingPayment || r.state > StateClosed {
			bad("reservation %d has state %d", seq, r.state)
			continue
		}
		states[r.state]++
		if r.state != StateClosed {
			if prev, ok := liveUsers[m.table.userID(r)]; ok {
				bad("user %q has two live purchases: %d and %d", m.table.userID(r), prev, seq)
			}
			liveUsers[m.table.userID(r)] = seq
			if !r.holdsToken() {
				bad("reservation %d is %s but holds no token", seq, r.state)
			}
		}
		if s, ok := m.byRequest.get(m.table.requestID(r)); !ok || s != seq {
			bad("request_id %q of reservation %d not indexed", m.table.requestID(r), seq)
		}
		if !r.holdsToken() {
			continue
		}
		if r.token == 0 || int(r.token) > len(m.pool.slots) {
			bad("reservation %d holds token %d that was never handed out", seq, r.token)
			continue
		}
		w, b := (r.token-1)/64, uint64(1)<<((r.token-1)%64)
		if held[w]&b != 0 {
			bad("token %d held twice (again by %d)", r.token, seq)
		}
		held[w] |= b
		st, holder := m.pool.state(r.token)
		want := TokenReserved
		switch r.state {
		case StatePaid:
			want = TokenConfirmed
			confirmed++
		case StateClosed:
			heldClosed++
			reserved++
		default:
			reserved++
		}
		if st != want || holder != seq {
			bad("token %d is %s held by %d, want %s held by %d", r.token, st, holder, want, seq)
		}
	}
	if states != m.states {
		bad("state counters %v, recount %v", m.states[1:], states[1:])
	}
	if reserved != c.Reserved || confirmed != c.Confirmed || heldClosed != c.HeldClosed {
		bad("token counters reserved %d confirmed %d held-closed %d, recount %d %d %d",
			c.Reserved, c.Confirmed, c.HeldClosed, reserved, confirmed, heldClosed)
	}
	for id, slot := range m.pool.slots {
		token := uint32(id + 1)
		isHeld := held[id/64]&(1<<(id%64)) != 0
		if slot != 0 && !isHeld {
			bad("token %d is bound to %d, which does not hold it", token, slot&^confirmedBit)
		}
	}
	seen := make(map[uint32]bool, len(m.pool.released)-m.pool.releasedHead)
	for _, token := range m.pool.released[m.pool.releasedHead:] {
		if seen[token] || token == 0 || int(token) > len(m.pool.slots) || m.pool.slots[token-1] != 0 {
			bad("released token %d is not free or listed twice", token)
		}
		seen[token] = true
	}
	if len(liveUsers) != m.live.len() {
		bad("live-user index has %d users, recount %d", m.live.len(), len(liveUsers))
	}
	for user, seq := range liveUsers {
		if got, _ := m.live.get(user); got != seq {
			bad("live-user index maps %q to %d, want %d", user, got, seq)
		}
	}
	m.auditLottery(bad)
	if m.byRequest.len() != int(m.table.count) {
		bad("request index has %d entries for %d reservations", m.byRequest.len(), m.table.count)
	}
	m.auditUnpaid(bad)
	return a
}

// auditUnpaid recounts the unpaid reservations per subject key.
func (m *Machine) auditUnpaid(bad func(format string, args ...any)) {
	recount := make(map[subjectSlot]uint32, len(m.unpaid))
	var prev uint32
	for _, row := range m.holders.rows {
		if row.seq <= prev || row.seq > m.table.count {
			bad("holder of reservation %d out of order", row.seq)
			continue
		}
		prev = row.seq
		if m.table.get(row.seq).state != StatePendingPayment {
			continue
		}
		for k := 0; k < SubjectKindCount; k++ {
			if row.h.Subjects&(1<<k) != 0 {
				recount[subjectSlot{uint8(k), row.h.Keys[k]}]++
			}
		}
	}
	if len(recount) != len(m.unpaid) {
		bad("unpaid counts hold %d subject keys, recount %d", len(m.unpaid), len(recount))
	}
	for s, n := range recount {
		if m.unpaid[s] != n {
			bad("unpaid count of a %d-kind subject key is %d, recount %d", s.kind, m.unpaid[s], n)
		}
	}
}
