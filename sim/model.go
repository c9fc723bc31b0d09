package sim

import (
	"maps"
	"slices"
	"strings"

	"github.com/seckill/seckill/actors/sku"
)

// The model is the simulator's own account of what one SKU must answer,
// written from the rules (docs/api.md, sku's docs), not from the engine's code:
// it shares only the engine's vocabulary (Outcome, Definition) so that
// replies can be compared. It decides every call the engine decides, in the
// same order and at the same time, and predicts the reply and the number
// of records the engine must write (one per effect below). Time is Unix ms.

// modelState is a reservation's state in the model.
type modelState uint8

const (
	mPending modelState = iota + 1
	mPaid
	mClosed
)

// modelReservation is one reservation as the model sees it.
type modelReservation struct {
	request, user string
	subjects      []modelSubject // the subject keys of its entry pass
	token         uint32
	state         modelState
	expired       bool // closed because expire_at passed (else cancelled)
	expireAt      int64
	holds         bool // its token is still bound to it
	payment       string
	refunds       []string
}

// modelRequest is the recorded answer of a request_id.
type modelRequest struct {
	user    string
	soldOut bool   // a recorded SOLD_OUT; else ACCEPTED
	seq     uint32 // ACCEPTED: the reservation
}

// model is the whole SKU. Effects are applied one at a time through
// effect, which counts them (each is one record of the engine's log).
type model struct {
	defined  bool
	def      sku.Definition
	paused   bool
	lastAt   int64
	res      []modelReservation // seq-1
	requests map[string]modelRequest
	live     map[string]uint32 // user -> PENDING or PAID reservation
	released []uint32          // tokens given back, oldest first
	fresh    uint32            // tokens ever handed out
	refunds  int
	soldOut  int           // SOLD_OUT answers recorded
	cell     modelCell     // a celled SKU's grants and returns (model_cells.go)
	lot      *modelLottery // a lottery SKU's entries and draw (model_lottery.go), nil otherwise

	// effects counts the effects applied since the count was last read;
	// onEffect, when set, runs after each one.
	effects  int
	onEffect func()
}

// maxRecordedSoldOut is the documented cap on recorded SOLD_OUT answers
// (docs/api.md, "Reserving"): a
// request_id refused beyond it keeps no answer (a retry is decided again).
const maxRecordedSoldOut = 1 << 14

func newModel() *model {
	return &model{requests: map[string]modelRequest{}, live: map[string]uint32{}}
}

// clone returns an independent copy (without onEffect).
func (m *model) clone() *model {
	c := *m
	c.res = slices.Clone(m.res)
	for i := range c.res {
		c.res[i].refunds = slices.Clip(c.res[i].refunds)
	}
	c.requests = maps.Clone(m.requests)
	c.live = maps.Clone(m.live)
	c.released = slices.Clone(m.released)
	c.cell = m.cell.clone()
	c.lot = m.lot.clone()
	c.onEffect = nil
	return &c
}

// effect applies one change decided at at.
func (m *model) effect(at int64, change func()) {
	change()
	m.lastAt = at
	m.effects++
	if m.onEffect != nil {
		m.onEffect()
	}
}

func (m *model) at(now int64) int64 { return max(now, m.lastAt) }

func (m *model) get(seq uint32) *modelReservation {
	if seq == 0 || int(seq) > len(m.res) {
		return nil
	}
	return &m.res[seq-1]
}

// available is the tokens a reserve can take without closing anything.
func (m *model) available() uint32 {
	if m.celled() {
		return uint32(len(m.cell.unsold) + len(m.released))
	}
	return m.def.SaleLimit - m.fresh + uint32(len(m.released))
}

// modelReply is a predicted reply.
type modelReply struct {
	outcome   sku.Outcome
	seq       uint32 // the reservation the reply shows, 0: none
	duplicate bool
}

func (m *model) define(now int64, d sku.Definition) sku.Outcome {
	rules := d.Lottery
	d.Lottery = nil // the model keeps a lottery's rules in m.lot
	if d.Cell != "" && (d.MaxUnpaidPerSubject != 0 || rules != nil) {
		return sku.OutcomeInvalid // not for a celled SKU
	}
	if m.defined {
		d.IDKey = m.def.IDKey
		if d == m.def && (rules != nil) == (m.lot != nil) {
			return sku.OutcomeOK
		}
		if d.SaleLimit < m.def.SaleLimit || d.EndAt < m.def.EndAt || d.StartAt != m.def.StartAt ||
			d.PaymentWindowMs != m.def.PaymentWindowMs || d.ReleaseOnClose != m.def.ReleaseOnClose ||
			d.PaymentWindowHighRiskMs != m.def.PaymentWindowHighRiskMs ||
			d.CampaignID != m.def.CampaignID || d.SKUID != m.def.SKUID ||
			(rules != nil) != (m.lot != nil) || m.lot != nil && d.SaleLimit != m.def.SaleLimit {
			return sku.OutcomeInvalid // a lottery stays one, with its sale_limit
		}
	}
	if rules != nil {
		if t, _ := rules.Beacon.TimeMs(); t >= d.EndAt {
			return sku.OutcomeInvalid // the draw would come after the sale ends
		}
	}
	first := !m.defined
	at := m.at(now)
	if l := m.lot; !first && l != nil && l.started && !l.done && at >= m.def.EndAt && d.EndAt != m.def.EndAt {
		return sku.OutcomeInvalid // end_at passed during the draw: it stays until the draw ends the lottery
	}
	if !first {
		m.endLottery(at) // a lottery past its end_at ends before the change
	}
	m.effect(at, func() { m.def, m.defined = d, true })
	if first && rules != nil {
		m.defineLottery(at, *rules)
	}
	return sku.OutcomeOK
}

// closeRes closes reservation seq at at, giving its token back when the
// definition says so.
func (m *model) closeRes(at int64, seq uint32, expired bool) {
	m.effect(at, func() {
		r := m.get(seq)
		r.state, r.expired = mClosed, expired
		delete(m.live, r.user)
		if m.def.ReleaseOnClose {
			r.holds = false
			m.released = append(m.released, r.token)
		}
	})
	m.promote(at) // a lottery's waitlist takes the token
}

// expireDue closes, oldest first, up to limit PENDING reservations whose
// expire_at is at or before at.
func (m *model) expireDue(at int64, limit int) {
	for seq := uint32(1); int(seq) <= len(m.res) && limit > 0; seq++ {
		if r := m.get(seq); r.state == mPending && r.expireAt <= at {
			m.closeRes(at, seq, true)
			limit--
		}
	}
}

// The rule's bounds on expiry work: a reserve that finds no token closes
// up to expireOnSoldOut due reservations before it answers SOLD_OUT, a tick
// up to the engine's expiry batch (far more than a history reaches).
const (
	expireOnSoldOut = 64
	expireOnTick    = 1024
)

// modelSubject is one subject key of an entry pass, with its kind: the
// same 8 bytes as a device and as a network are two subjects.
type modelSubject struct {
	kind int
	key  sku.SubjectKey
}

// subjectsOf lists the subject keys an entry pass's holder carries.
func subjectsOf(h sku.Holder) []modelSubject {
	var out []modelSubject
	for k := 0; k < sku.SubjectKindCount; k++ {
		if key, ok := h.Key(k); ok {
			out = append(out, modelSubject{k, key})
		}
	}
	return out
}

// overCap is the documented cap (docs/passes.md): one of the subjects already has
// max_unpaid_per_subject PENDING reservations (0: no cap).
func (m *model) overCap(subjects []modelSubject) bool {
	if m.def.MaxUnpaidPerSubject == 0 {
		return false
	}
	for _, s := range subjects {
		n := uint32(0)
		for i := range m.res {
			if r := &m.res[i]; r.state == mPending && slices.Contains(r.subjects, s) {
				n++
			}
		}
		if n >= m.def.MaxUnpaidPerSubject {
			return true
		}
	}
	return false
}

// window is the payment window of a reservation whose entry pass gave
// risk: risk >= 1 gets the high-risk window, when the definition sets one.
func (m *model) window(risk uint8) int64 {
	if risk >= 1 && m.def.PaymentWindowHighRiskMs > 0 {
		return m.def.PaymentWindowHighRiskMs
	}
	return m.def.PaymentWindowMs
}

// reserve is a reserve by user, with the holder of its entry pass (zero:
// none).
func (m *model) reserve(now int64, request, user string, holder sku.Holder) modelReply {
	if !m.defined {
		return modelReply{outcome: sku.OutcomeNotFound}
	}
	if !validID(request) || !validID(user) {
		return modelReply{outcome: sku.OutcomeInvalid}
	}
	if m.lot != nil {
		return modelReply{outcome: sku.OutcomeLotterySale}
	}
	if q, ok := m.requests[request]; ok {
		switch {
		case q.user != user:
			return modelReply{outcome: sku.OutcomeRequestIDReused}
		case q.soldOut:
			return modelReply{outcome: sku.OutcomeSoldOut, duplicate: true}
		}
		return modelReply{outcome: sku.OutcomeAccepted, seq: q.seq, duplicate: true}
	}
	at := m.at(now)
	switch {
	case at < m.def.StartAt:
		return modelReply{outcome: sku.OutcomeNotStarted}
	case at >= m.def.EndAt:
		return modelReply{outcome: sku.OutcomeEnded}
	case m.paused:
		return modelReply{outcome: sku.OutcomePaused}
	}
	if seq, ok := m.live[user]; ok {
		if r := m.get(seq); r.state == mPaid || at < r.expireAt {
			return modelReply{outcome: sku.OutcomeAlreadyPurchased, seq: seq}
		}
		m.closeRes(at, seq, true) // its payment window is over: the user may buy again
	}
	subjects := subjectsOf(holder)
	if m.overCap(subjects) {
		m.expireDue(at, expireOnSoldOut) // a due reservation frees its subjects
		if m.overCap(subjects) {
			return modelReply{outcome: sku.OutcomeSubjectLimit} // not recorded
		}
	}
	if m.available() == 0 {
		m.expireDue(at, expireOnSoldOut)
	}
	if m.available() == 0 {
		if m.soldOut < maxRecordedSoldOut && !m.celled() { // beyond it, or celled: answered without a record
			m.effect(at, func() {
				m.requests[request] = modelRequest{user: user, soldOut: true}
				m.soldOut++
			})
		}
		return modelReply{outcome: sku.OutcomeSoldOut}
	}
	seq := uint32(len(m.res)) + 1
	m.effect(at, func() {
		token := m.fresh + 1
		switch {
		case len(m.released) > 0:
			token, m.released = m.released[0], m.released[1:]
		case m.celled():
			token, m.cell.unsold = m.cell.unsold[0], m.cell.unsold[1:]
		default:
			m.fresh++
		}
		m.res = append(m.res, modelReservation{request: request, user: user, token: token, subjects: subjects,
			state: mPending, expireAt: at + m.window(holder.Risk), holds: true})
		m.requests[request] = modelRequest{user: user, seq: seq}
		m.live[user] = seq
	})
	return modelReply{outcome: sku.OutcomeAccepted, seq: seq}
}

// refund records payment for refund on seq, once per payment id.
func (m *model) refund(at int64, seq uint32, payment string) {
	r := m.get(seq)
	if slices.Contains(r.refunds, payment) {
		return
	}
	m.effect(at, func() {
		r.refunds = append(r.refunds, payment)
		m.refunds++
	})
}

func (m *model) pay(now int64, seq uint32, payment string) modelReply {
	r := m.get(seq)
	if r == nil {
		return modelReply{outcome: sku.OutcomeNotFound}
	}
	at := m.at(now)
	switch r.state {
	case mPaid:
		if r.payment == payment {
			return modelReply{outcome: sku.OutcomeAlreadyPaid, seq: seq}
		}
		m.refund(at, seq, payment)
		return modelReply{outcome: sku.OutcomePaymentConflict, seq: seq}
	case mPending:
		if at < r.expireAt {
			m.effect(at, func() { r.state, r.payment = mPaid, payment })
			return modelReply{outcome: sku.OutcomePaid, seq: seq}
		}
		m.closeRes(at, seq, true) // a late payment never resurrects an order
	}
	m.refund(at, seq, payment)
	return modelReply{outcome: sku.OutcomeRefundRequired, seq: seq}
}

func (m *model) cancel(now int64, seq uint32, expiredOnly bool) modelReply {
	r := m.get(seq)
	switch {
	case r == nil:
		return modelReply{outcome: sku.OutcomeNotFound}
	case r.state == mPaid:
		return modelReply{outcome: sku.OutcomeNotClosable, seq: seq}
	case r.state == mClosed:
		return modelReply{outcome: sku.OutcomeAlreadyClosed, seq: seq}
	}
	at := m.at(now)
	expired := at >= r.expireAt
	if expiredOnly && !expired {
		return modelReply{outcome: sku.OutcomeNotExpired, seq: seq}
	}
	m.closeRes(at, seq, expired)
	return modelReply{outcome: sku.OutcomeClosed, seq: seq}
}

func (m *model) release(now int64, seq uint32) modelReply {
	r := m.get(seq)
	switch {
	case r == nil:
		return modelReply{outcome: sku.OutcomeNotFound}
	case r.state == mPaid:
		return modelReply{outcome: sku.OutcomeNotClosable, seq: seq}
	case r.state == mPending:
		return modelReply{outcome: sku.OutcomeNotClosed, seq: seq}
	case !r.holds:
		return modelReply{outcome: sku.OutcomeAlreadyReleased, seq: seq}
	}
	at := m.at(now)
	m.effect(at, func() {
		r.holds = false
		m.released = append(m.released, r.token)
	})
	m.promote(at)
	return modelReply{outcome: sku.OutcomeReleased, seq: seq}
}

// lookup is the durable answer a request_id got: its reservation, a
// recorded SOLD_OUT, or nothing (OutcomeNone).
func (m *model) lookup(request string) modelReply {
	q, ok := m.requests[request]
	switch {
	case !ok:
		return modelReply{}
	case q.soldOut:
		return modelReply{outcome: sku.OutcomeSoldOut}
	}
	return modelReply{outcome: sku.OutcomeAccepted, seq: q.seq}
}

func (m *model) setPaused(now int64, paused bool) sku.Outcome {
	if !m.defined {
		return sku.OutcomeNotFound
	}
	if m.paused != paused {
		m.effect(m.at(now), func() { m.paused = paused })
	}
	return sku.OutcomeOK
}

// tick is the engine's timer: every reservation past its expire_at closes;
// a lottery's entries close at entries_close_at, its waitlist at end_at.
func (m *model) tick(now int64) {
	if m.defined {
		m.expireDue(m.at(now), expireOnTick)
		m.closeEntries(m.at(now))
		m.endLottery(m.at(now))
	}
}

// validID is the documented id rule (docs/api.md): 1-64 characters of [A-Za-z0-9._:-],
// not "." or "..".
func validID(s string) bool {
	if len(s) == 0 || len(s) > 64 || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-", c)) {
			return false
		}
	}
	return true
}
