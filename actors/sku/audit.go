package sku

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
)

// MaxViolations bounds the violations one Audit reports.
const MaxViolations = 100

// Audit is the result of checking every invariant on a SKU's state.
type Audit struct {
	Counts     Counts
	Violations []string // empty when healthy; at most MaxViolations
	// LastAt is the time of the last record applied to the state audited
	// (Unix ms): the audit is of the state as of then.
	LastAt int64
}

// OK reports whether no invariant is violated.
func (a Audit) OK() bool { return len(a.Violations) == 0 }

// violation records a violation while fewer than MaxViolations are kept.
func (a *Audit) violation(format string, args ...any) {
	if len(a.Violations) < MaxViolations {
		a.Violations = append(a.Violations, fmt.Sprintf(format, args...))
	}
}

// Audit recounts everything from the reservation table and the token slots
// and checks the invariants:
//   - sale_limit = available + reserved + confirmed, none negative;
//   - each token is held by at most one reservation, and a holder's token is
//     in the matching state (PENDING_PAYMENT or held CLOSED: RESERVED; PAID:
//     CONFIRMED); every PENDING_PAYMENT or PAID reservation holds a token;
//   - each user has at most one live (PENDING_PAYMENT or PAID) reservation;
//   - the counters agree with the recount;
//   - the indexes and the token slots agree with the table, and the refund
//     index with the refund list;
//   - the lottery's state agrees with the table (auditLottery);
//   - the unpaid counts per subject key agree with the holders of the
//     PENDING_PAYMENT reservations, and holders are in seq order;
//   - for a celled SKU instead of the first: granted = available + reserved
//   - confirmed + returned, the grant and return totals recount, and the
//     unsold tokens lie within 1..sale_limit and are neither held nor
//     released (auditCell).
//
// It is O(reservations + tokens) and allocates a bitmap of sale_limit bits.
// It runs on the Machine's goroutine, so it stalls the SKU for as long:
// a live service audits a Frozen copy instead (Frozen.Audit).
func (m *Machine) Audit() Audit {
	a := Audit{Counts: m.Counts(), LastAt: m.lastAt}
	if m.states != [4]uint32{0, a.Counts.PendingPayment, a.Counts.Paid, a.Counts.Closed} {
		a.violation("state counters %v do not match the counts", m.states[1:])
	}
	released := m.pool.released[m.pool.releasedHead:]
	r := recountRows(&a, &m.table, uint32(len(m.pool.slots)), released, m.pool.celled,
		func(seq uint32, requestID string) {
			if s, ok := m.byRequest.get(requestID); !ok || s != seq {
				a.violation("request_id %q of reservation %d not indexed", requestID, seq)
			}
		})
	for id, slot := range m.pool.slots {
		token := uint32(id + 1)
		held, bound := r.held[id/64]&(1<<(id%64)) != 0, slot != 0
		if bound && !held {
			a.violation("token %d is bound to %d, which does not hold it", token, slot&^confirmedBit)
			continue
		}
		if !held {
			continue
		}
		st, holder := m.pool.state(token)
		if want, seq := r.want(token); st != want || holder != seq {
			a.violation("token %d is %s held by %d, want %s held by %d", token, st, holder, want, seq)
		}
	}
	if r.liveUsers != m.live.len() {
		a.violation("live-user index has %d users, recount %d", m.live.len(), r.liveUsers)
	}
	for _, e := range r.live {
		user := m.table.userID(e.seq)
		if got, _ := m.live.get(user); got != e.seq {
			a.violation("live-user index maps %q to %d, want %d", user, got, e.seq)
		}
	}
	if m.pool.celled {
		auditCell(&a, &m.cell, &m.pool.unsold, &r, released)
	}
	m.auditLottery(a.violation)
	if m.byRequest.len() != int(m.table.count) {
		a.violation("request index has %d entries for %d reservations", m.byRequest.len(), m.table.count)
	}
	m.auditUnpaid(a.violation)
	m.auditRefundIndex(a.violation)
	return a
}

// Audit checks the invariants of Audit that the frozen rows and counters
// decide: every one but the agreement of the derived indexes and token
// slots, which a Frozen does not keep (Restore rebuilds them from the rows,
// and seckillctl verify audits the restored Machine). It reads only the
// Frozen, so it runs on any goroutine while the Machine goes on: the live
// service's audit (actors.Engine.Audit). O(reservations + tokens).
func (f *Frozen) Audit() Audit {
	a := Audit{Counts: f.counts, LastAt: f.lastAt}
	r := recountRows(&a, &f.table, f.handedOut, f.released, f.def.Cell != "", nil)
	if f.def.Cell != "" {
		auditCell(&a, &f.cell, &f.unsold, &r, f.released)
	}
	return a
}

// Conservation checks the counters' conservation of tokens, the one rule
// both the audit (Audit) and the live figures (httpapi's /admin/stats,
// invariant_ok) report: sale_limit = available + reserved + confirmed, or,
// for a celled SKU (celled), whose tokens are what the ledger granted it,
// granted = available + reserved + confirmed + returned. It returns the
// violation, "" when the rule holds.
func (c Counts) Conservation(celled bool) string {
	owned := uint64(c.Available) + uint64(c.Reserved) + uint64(c.Confirmed)
	switch {
	case celled && (c.Returned > c.Granted || owned != c.Granted-c.Returned):
		return fmt.Sprintf("granted %d != available %d + reserved %d + confirmed %d + returned %d",
			c.Granted, c.Available, c.Reserved, c.Confirmed, c.Returned)
	case !celled && owned != uint64(c.SaleLimit):
		return fmt.Sprintf("sale_limit %d != available %d + reserved %d + confirmed %d", c.SaleLimit, c.Available, c.Reserved, c.Confirmed)
	}
	return ""
}

// rowRecount is what recountRows learnt from the rows. It holds no
// pointers: at millions of reservations the garbage collector, which runs
// beside the SKU's actor, has nothing in it to scan.
type rowRecount struct {
	held   []uint64 // bit token-1 is set when a row holds token
	holder []uint32 // holder[token-1]: the seq holding it (when held)
	paid   []uint64 // bit token-1 is set when its holder is PAID
	// live lists the live (PENDING_PAYMENT or PAID) reservations by the
	// hash of their user_id; liveUsers counts their distinct users.
	live      []liveRow
	liveUsers int
}

// liveRow is a live reservation and the 32-bit hash of its user_id.
type liveRow struct {
	hash, seq uint32
}

// isHeld reports whether a row holds token (a token never handed out: no).
func (r *rowRecount) isHeld(token uint32) bool {
	i := token - 1
	return token != 0 && int(i) < len(r.holder) && r.held[i/64]&(1<<(i%64)) != 0
}

// want returns the state and holder a held token must have.
func (r *rowRecount) want(token uint32) (TokenState, uint32) {
	i := token - 1
	if r.paid[i/64]&(1<<(i%64)) != 0 {
		return TokenConfirmed, r.holder[i]
	}
	return TokenReserved, r.holder[i]
}

// recountRows recounts the rows of t and checks against a.Counts every
// invariant the rows and counters decide (see Machine.Audit), handedOut
// being the number of token ids ever handed out and released the FIFO of
// free ones. A celled SKU's (celled) pool is checked against its grants
// instead (auditCell): its token ids have holes, so neither sale_limit nor
// handedOut counts its tokens. perRow, if set, is called with each row's
// seq and request_id.
func recountRows(a *Audit, t *table, handedOut uint32, released []uint32, celled bool, perRow func(seq uint32, requestID string)) rowRecount {
	c := a.Counts
	if !celled { // a celled SKU's: auditCell
		if v := c.Conservation(false); v != "" {
			a.violation("%s", v)
		}
	}
	if c.SaleLimit < handedOut {
		a.violation("%d tokens handed out beyond sale_limit %d", handedOut, c.SaleLimit)
	}
	words := (int(handedOut) + 63) / 64
	r := rowRecount{
		held:   make([]uint64, words),
		holder: make([]uint32, handedOut),
		paid:   make([]uint64, words),
		live:   make([]liveRow, 0, c.PendingPayment+c.Paid),
	}
	seed := maphash.MakeSeed()
	var states [4]uint32
	var reserved, confirmed, heldClosed uint32
	for seq := uint32(1); seq <= t.count; seq++ {
		row := t.get(seq)
		if row.state < StatePendingPayment || row.state > StateClosed {
			a.violation("reservation %d has state %d", seq, row.state)
			continue
		}
		states[row.state]++
		if row.state != StateClosed {
			r.live = append(r.live, liveRow{hash: uint32(maphash.String(seed, t.userID(seq))), seq: seq})
			if !row.holdsToken() {
				a.violation("reservation %d is %s but holds no token", seq, row.state)
			}
		}
		if perRow != nil {
			perRow(seq, t.requestID(seq))
		}
		if !row.holdsToken() {
			continue
		}
		if row.token == 0 || row.token > handedOut {
			a.violation("reservation %d holds token %d that was never handed out", seq, row.token)
			continue
		}
		i := row.token - 1
		w, b := i/64, uint64(1)<<(i%64)
		if r.held[w]&b != 0 {
			a.violation("token %d held twice (again by %d)", row.token, seq)
		}
		r.held[w] |= b
		r.holder[i] = seq
		switch row.state {
		case StatePaid:
			r.paid[w] |= b
			confirmed++
		case StateClosed:
			heldClosed++
			reserved++
		default:
			reserved++
		}
	}
	r.liveUsers = checkOneLivePerUser(a, t, r.live)
	if got := [4]uint32{0, c.PendingPayment, c.Paid, c.Closed}; states != got || t.count != c.Reservations {
		a.violation("state counters %v of %d reservations, recount %v of %d", got[1:], c.Reservations, states[1:], t.count)
	}
	if reserved != c.Reserved || confirmed != c.Confirmed || heldClosed != c.HeldClosed {
		a.violation("token counters reserved %d confirmed %d held-closed %d, recount %d %d %d",
			c.Reserved, c.Confirmed, c.HeldClosed, reserved, confirmed, heldClosed)
	}
	if free := handedOut - min(handedOut, reserved+confirmed); !celled && uint32(len(released)) != free {
		a.violation("%d released tokens listed, %d handed out and not held", len(released), free)
	}
	seen := make(map[uint32]bool, len(released))
	for _, token := range released {
		i := token - 1
		if seen[token] || token == 0 || token > handedOut || r.held[i/64]&(1<<(i%64)) != 0 {
			a.violation("released token %d is not free or listed twice", token)
		}
		seen[token] = true
	}
	return r
}

// checkOneLivePerUser sorts live by user hash and reports every user with
// two live reservations (rows of equal hash are compared by user_id); it
// returns the number of distinct users. O(n log n), no allocation.
func checkOneLivePerUser(a *Audit, t *table, live []liveRow) int {
	slices.SortFunc(live, func(x, y liveRow) int {
		return cmp.Or(cmp.Compare(x.hash, y.hash), cmp.Compare(x.seq, y.seq))
	})
	users := 0
	for i := range live {
		user := t.userID(live[i].seq)
		first := true
		for j := i - 1; j >= 0 && live[j].hash == live[i].hash; j-- {
			if t.userID(live[j].seq) == user {
				a.violation("user %q has two live purchases: %d and %d", user, live[j].seq, live[i].seq)
				first = false
				break
			}
		}
		if first {
			users++
		}
	}
	return users
}

// auditUnpaid recounts the unpaid reservations per subject key.
func (m *Machine) auditUnpaid(bad func(format string, args ...any)) {
	recount := newSubjectCounts()
	var prev uint32
	for _, row := range m.holders.rows {
		if row.seq <= prev || row.seq > m.table.count {
			bad("holder of reservation %d out of order", row.seq)
			continue
		}
		prev = row.seq
		if m.table.get(row.seq).state == StatePendingPayment {
			recount.add(&row.h)
		}
	}
	if diff, ok := m.unpaid.equal(&recount); !ok {
		bad("unpaid counts: %s", diff)
	}
}
