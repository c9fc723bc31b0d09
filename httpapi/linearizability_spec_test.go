package httpapi_test

import (
	"fmt"
	"hash/maphash"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential specification of one SKU that TestLinearizability checks
// the HTTP service against: what a single reserve, pay, cancel or read may
// answer from a given state, and the state after it. It is written from the
// README (Invariants, Outcomes, HTTP API), not from actors/sku: a second,
// independent description of the same promises, so that a mistake shared by
// the Machine and its own tests still shows here.
//
// Entry passes and caps: a reserve may carry an entry pass,
// minted for a user with or without a device subject; the SKU caps the
// unpaid reservations per device (max_unpaid_per_subject). A pass sent by
// another user than its own is ENTRY_PASS_INVALID and decides nothing; a
// request_id of the form "ep.…" without its pass is BAD_REQUEST; a new
// reserve whose device is at the cap, by a user without a live purchase,
// is SUBJECT_LIMIT and decides nothing.
//
// Scope: a SKU of a campaign that is open for the whole test, with
// release_on_close=true and a payment window far longer than the test, so
// that nothing expires (expiry is decided by the server's clock, which this
// specification does not model). No pause, no operator release, no 504:
// the test fails before checking if it sees one (see linRecorder.do).
//
// Nondeterminism is resolved from the answers:
//   - reservation ids are opaque: a 202 names a new one, which the state
//     then maps to its reservation; token ids are checked as a promise
//     (in 1..sale_limit, held by no live reservation), not as a sequence.
//   - a SOLD_OUT for a request_id not yet decided is either recorded by the
//     SKU (the request_id keeps that answer) or a fast-path refusal that
//     records nothing; the answer is the same. The state keeps such a
//     request_id as "maybe recorded" until a later answer tells: a repeat
//     of it (REQUEST_ID_REUSED from another user, or SOLD_OUT while stock is
//     left, says recorded; any other answer says not), or its lookup. An
//     audit's durable_rejections is checked as a range while some are open.
//   - QUEUE_FULL and THROTTLED (429: the SKU's inbox, or its disk's
//     commits, are too slow for max_queue_wait) decide nothing and may
//     answer any reserve: a slow disk makes admission answer THROTTLED.
//
// Two things are deliberately left loose, because pinning them made the
// checker's search explode (states that differ only by them multiply with
// every concurrent operation) while no promise rests on them: the order of
// the refunds list (compared as a set; README: "payments to refund"), and
// whether a SOLD_OUT to a user holding a purchase was recorded (the SKU
// answers such a user ALREADY_PURCHASED, so only the fast path says
// SOLD_OUT to them; the specification allows either).

// linKind is the kind of one operation of the history.
type linKind uint8

const (
	linReserve linKind = iota + 1 // POST /v1/campaigns/{c}/skus/{s}/reservations
	linPay                        // POST /v1/reservations/{id}/payment
	linCancel                     // POST /v1/reservations/{id}/cancel
	linGet                        // GET /v1/reservations/{id}
	linLookup                     // GET /v1/campaigns/{c}/skus/{s}/requests/{request_id}
	linStatus                     // GET /v1/campaigns/{c}/skus/{s}
	linAudit                      // GET /admin/campaigns/{c}/skus/{s}/audit
	linRefunds                    // GET /admin/campaigns/{c}/skus/{s}/refunds
	linEnter                      // POST /v1/campaigns/{c}/skus/{s}/entries (the campaign specification's lottery)
)

var linKindNames = [...]string{"", "reserve", "pay", "cancel", "get", "lookup", "status", "audit", "refunds", "enter"}

// String names the operation as the visualization shows it.
func (k linKind) String() string {
	if int(k) < len(linKindNames) {
		return linKindNames[k]
	}
	return fmt.Sprintf("linKind(%d)", uint8(k))
}

// linInput is what one client asked.
type linInput struct {
	kind          linKind
	requestID     string // reserve, lookup
	userID        string // reserve
	reservationID string // pay, cancel, get
	paymentID     string // pay
	amount        int64  // pay: sent only when hasAmount
	hasAmount     bool
	// An entry pass (reserve): its text ("" none), the user it was minted
	// for and its device subject ("" none). requestID is then the pass's.
	pass, passUser, device string
}

// linOutput is the full answer the client observed: status code, the
// Location header and the body, raw and decoded.
type linOutput struct {
	code     int
	location string
	body     linAnswer
	raw      string
}

// linAnswer is the union of the JSON fields the routes under test answer.
type linAnswer struct {
	Error          string     `json:"error"`
	Outcome        string     `json:"outcome"`
	Status         string     `json:"status"`
	ReservationID  string     `json:"reservation_id"`
	SKUID          string     `json:"sku_id"` // ALREADY_PURCHASED (the campaign specification)
	RequestID      string     `json:"request_id"`
	UserID         string     `json:"user_id"`
	State          string     `json:"state"`
	TokenID        int        `json:"token_id"`
	CreatedAt      string     `json:"created_at"`
	ExpireAt       string     `json:"expire_at"`
	PaidAt         string     `json:"paid_at"`
	PaymentID      string     `json:"payment_id"`
	ClosedAt       string     `json:"closed_at"`
	ClosedReason   string     `json:"closed_reason"`
	RefundRequired bool       `json:"refund_required"`
	StatusURL      string     `json:"status_url"`
	Reservation    *linAnswer `json:"reservation"` // a lookup's reservation

	// The audit.
	SaleLimit       int            `json:"sale_limit"`
	Available       int            `json:"available"`
	Reserved        int            `json:"reserved"`
	Confirmed       int            `json:"confirmed"`
	States          map[string]int `json:"states"`
	HeldClosed      int            `json:"held_closed"`
	RefundsRequired int            `json:"refunds_required"`
	Rejected        int            `json:"durable_rejections"`
	Reservations    int            `json:"reservations"`
	InvariantOK     bool           `json:"invariant_ok"`
	Violations      []string       `json:"violations"`

	// The refunds list.
	Refunds []linRefund `json:"refunds"`
}

// linRefund is one payment to refund, in a refunds list and in the state.
type linRefund struct {
	ReservationID string `json:"reservation_id"`
	PaymentID     string `json:"payment_id"`
	Amount        int64  `json:"amount"`
}

// The reservation states, close reason and answers the specification names.
const (
	statePending   = "PENDING_PAYMENT"
	statePaid      = "PAID"
	stateClosed    = "CLOSED"
	reasonCanceled = "CANCELLED"
)

// specReservation is one reservation of the specification.
type specReservation struct {
	id, requestID, userID string
	token                 int
	expireAt              string // as first answered: every later answer repeats it
	acceptance            string // the 202 body, which a repeat of the request_id gets byte for byte
	state                 string
	paymentID, paidAt     string // set once PAID
	amount                int64  // the paying payment's, once PAID
	device                string // the device subject of its pass, "" none
}

// live reports whether r is the user's purchase (and holds its token).
func (r specReservation) live() bool { return r.state != stateClosed }

// requestFate is what became of a request_id.
type requestFate uint8

const (
	fateAccepted     requestFate = iota + 1 // made reservation specRequest.reservationID
	fateSoldOut                             // SOLD_OUT, recorded: the request_id keeps it
	fateMaybeSoldOut                        // answered SOLD_OUT; recorded or not is still unknown
)

// specRequest is a request_id the SKU decided, or may have.
type specRequest struct {
	userID        string
	fate          requestFate
	reservationID string // the reservation it made (fateAccepted)
}

// specState is the state of the SKU. It is immutable: every step that
// changes it copies what it changes, so states reached on different paths
// of the checker's search never share a mutation. Its lists are kept in a
// canonical order (by id), not in the order things happened, so that
// operations that commute (two refunds, two reservations) reach the same
// state in either order and the checker explores it once.
type specState struct {
	saleLimit int
	// maxUnpaid is max_unpaid_per_subject: the most PENDING_PAYMENT
	// reservations one device may have (0: no cap).
	maxUnpaid    int
	reservations []specReservation      // by id
	requests     map[string]specRequest // the request_ids decided (or maybe)
	refunds      []linRefund            // payments to refund, by reservation and payment id
	// soldOutKnown and soldOutMaybe count the requests of fateSoldOut and
	// fateMaybeSoldOut.
	soldOutKnown, soldOutMaybe int
}

// newSpecState is a SKU of saleLimit tokens, and a cap of maxUnpaid
// unpaid reservations per device (0: none), before any request.
func newSpecState(saleLimit, maxUnpaid int) specState {
	return specState{saleLimit: saleLimit, maxUnpaid: maxUnpaid, requests: map[string]specRequest{}}
}

// overCap reports whether device already has maxUnpaid PENDING_PAYMENT
// reservations.
func (s specState) overCap(device string) bool {
	if device == "" || s.maxUnpaid == 0 {
		return false
	}
	n := 0
	for _, r := range s.reservations {
		if r.device == device && r.state == statePending {
			n++
		}
	}
	return n >= s.maxUnpaid
}

// counts returns the reservations per state.
func (s specState) counts() (pending, paid, closed int) {
	for _, r := range s.reservations {
		switch r.state {
		case statePending:
			pending++
		case statePaid:
			paid++
		default:
			closed++
		}
	}
	return pending, paid, closed
}

// available is sale_limit minus the tokens held: every live reservation
// holds one, a closed one none (release_on_close).
func (s specState) available() int {
	pending, paid, _ := s.counts()
	return s.saleLimit - pending - paid
}

// find returns the index of reservation id, or -1.
func (s specState) find(id string) int {
	if i, ok := slices.BinarySearchFunc(s.reservations, id, compareReservationID); ok {
		return i
	}
	return -1
}

// compareReservationID orders reservations by id.
func compareReservationID(r specReservation, id string) int { return strings.Compare(r.id, id) }

// liveOf returns the index of the user's live purchase, or -1.
func (s specState) liveOf(userID string) int {
	for i, r := range s.reservations {
		if r.userID == userID && r.live() {
			return i
		}
	}
	return -1
}

// tokenHeld reports whether a live reservation holds token.
func (s specState) tokenHeld(token int) bool {
	for _, r := range s.reservations {
		if r.live() && r.token == token {
			return true
		}
	}
	return false
}

// compareRefunds orders refunds by reservation id, then payment id.
func compareRefunds(a, b linRefund) int {
	if c := strings.Compare(a.ReservationID, b.ReservationID); c != 0 {
		return c
	}
	return strings.Compare(a.PaymentID, b.PaymentID)
}

// sortedRefunds returns a refunds list in the state's order.
func sortedRefunds(list []linRefund) []linRefund {
	list = slices.Clone(list)
	slices.SortFunc(list, compareRefunds)
	return list
}

// refundRequired reports whether reservation id has a payment to refund.
func (s specState) refundRequired(id string) bool {
	return slices.ContainsFunc(s.refunds, func(f linRefund) bool { return f.ReservationID == id })
}

// withReservation returns s with reservation i replaced by r.
func (s specState) withReservation(i int, r specReservation) specState {
	s.reservations = slices.Clone(s.reservations)
	s.reservations[i] = r
	return s
}

// withRequest returns s with request_id id set to q.
func (s specState) withRequest(id string, q specRequest) specState {
	return s.editRequests(id, &q)
}

// withoutRequest returns s without request_id id: a SOLD_OUT now known not
// to have been recorded.
func (s specState) withoutRequest(id string) specState {
	return s.editRequests(id, nil)
}

// editRequests returns s with request_id id set to *q, or removed if q is
// nil, on a copy of the map, keeping the counts of SOLD_OUTs.
func (s specState) editRequests(id string, q *specRequest) specState {
	m := make(map[string]specRequest, len(s.requests)+1)
	for k, v := range s.requests {
		if k != id {
			m[k] = v
		}
	}
	s.countSoldOut(s.requests[id], -1)
	if q != nil {
		m[id] = *q
		s.countSoldOut(*q, +1)
	}
	s.requests = m
	return s
}

// countSoldOut adds delta to the count of q's fate, if a SOLD_OUT.
func (s *specState) countSoldOut(q specRequest, delta int) {
	switch q.fate {
	case fateSoldOut:
		s.soldOutKnown += delta
	case fateMaybeSoldOut:
		s.soldOutMaybe += delta
	}
}

// recordedAmount is the amount recorded with paymentID on reservation r:
// its payment's, or a payment's recorded for refund.
func (s specState) recordedAmount(r specReservation, paymentID string) (int64, bool) {
	if r.state == statePaid && r.paymentID == paymentID {
		return r.amount, true
	}
	i, found := slices.BinarySearchFunc(s.refunds, linRefund{ReservationID: r.id, PaymentID: paymentID}, compareRefunds)
	if !found {
		return 0, false
	}
	return s.refunds[i].Amount, true
}

// withRefund returns s with paymentID recorded for refund on reservation
// id, once per payment_id: a repeat keeps the first amount.
func (s specState) withRefund(id, paymentID string, amount int64) specState {
	f := linRefund{ReservationID: id, PaymentID: paymentID, Amount: amount}
	i, found := slices.BinarySearchFunc(s.refunds, f, compareRefunds)
	if found {
		return s
	}
	s.refunds = slices.Insert(slices.Clip(s.refunds), i, f)
	return s
}

// step is the specification: whether out is an allowed answer to in from
// s, and the state after it.
func (s specState) step(in linInput, out linOutput) (bool, specState) {
	switch in.kind {
	case linReserve:
		return s.reserve(in, out)
	case linPay:
		return s.pay(in, out)
	case linCancel:
		return s.cancel(in, out)
	case linGet:
		i := s.find(in.reservationID)
		if i < 0 {
			return isError(out, http.StatusNotFound, "NOT_FOUND"), s
		}
		return out.code == http.StatusOK && s.viewMatches(s.reservations[i], out.body), s
	case linLookup:
		return s.lookup(in, out)
	case linStatus:
		return out.code == http.StatusOK && s.statusAllowed(out.body.Status), s
	case linAudit:
		return s.audit(out)
	case linRefunds:
		return out.code == http.StatusOK && slices.Equal(sortedRefunds(out.body.Refunds), s.refunds), s
	}
	return false, s
}

// isError reports whether out is the error answer code/reason.
func isError(out linOutput, code int, reason string) bool {
	return out.code == code && out.body.Error == reason
}

// reserve: a decided request_id answers as it was decided (REQUEST_ID_REUSED
// from another user); an undecided one is decided now (decide).
func (s specState) reserve(in linInput, out linOutput) (bool, specState) {
	// The entry-pass check comes first, before the answer cache and
	// admission, and decides nothing.
	if in.pass != "" && in.passUser != in.userID {
		return isError(out, http.StatusForbidden, "ENTRY_PASS_INVALID"), s
	}
	if in.pass == "" && strings.HasPrefix(in.requestID, "ep.") {
		return isError(out, http.StatusBadRequest, "BAD_REQUEST"), s
	}
	if isError(out, http.StatusTooManyRequests, "QUEUE_FULL") || isError(out, http.StatusTooManyRequests, "THROTTLED") {
		return true, s // busy: decides nothing
	}
	q, known := s.requests[in.requestID]
	if !known {
		return s.decide(in, out)
	}
	reused := isError(out, http.StatusUnprocessableEntity, "REQUEST_ID_REUSED")
	switch q.fate {
	case fateAccepted:
		if in.userID != q.userID {
			return reused, s
		}
		return s.acceptedAnswer(s.reservations[s.find(q.reservationID)], in, out), s
	case fateSoldOut:
		if in.userID != q.userID {
			return reused, s
		}
		return isError(out, http.StatusConflict, "SOLD_OUT"), s
	}
	// Maybe recorded: if it was, the request_id answers as decided;
	// if not, this request decides it afresh.
	if in.userID != q.userID {
		if reused {
			return true, s.withRequest(in.requestID, specRequest{userID: q.userID, fate: fateSoldOut})
		}
		return s.withoutRequest(in.requestID).decide(in, out)
	}
	if isError(out, http.StatusConflict, "SOLD_OUT") {
		if s.available() == 0 {
			return true, s // recorded then, or now, or neither: still maybe
		}
		return true, s.withRequest(in.requestID, specRequest{userID: q.userID, fate: fateSoldOut}) // only a recorded one answers SOLD_OUT with stock
	}
	return s.withoutRequest(in.requestID).decide(in, out)
}

// decide is a reserve of an undecided request_id: a reservation if the
// user has no live purchase and a token is free; ALREADY_PURCHASED naming
// the live purchase; SOLD_OUT when no token is free (recorded, or a
// fast-path refusal that records nothing).
func (s specState) decide(in linInput, out linOutput) (bool, specState) {
	live := s.liveOf(in.userID)
	switch {
	case out.code == http.StatusAccepted:
		if live >= 0 || s.available() == 0 || s.overCap(in.device) {
			return false, s
		}
		b := out.body
		r := specReservation{id: b.ReservationID, requestID: in.requestID, userID: in.userID,
			token: b.TokenID, expireAt: b.ExpireAt, acceptance: out.raw, state: statePending, device: in.device}
		if r.id == "" || s.find(r.id) >= 0 || r.token < 1 || r.token > s.saleLimit || s.tokenHeld(r.token) || r.expireAt == "" ||
			!s.acceptedAnswer(r, in, out) {
			return false, s
		}
		next := s
		i, _ := slices.BinarySearchFunc(s.reservations, r.id, compareReservationID)
		next.reservations = slices.Insert(slices.Clip(s.reservations), i, r)
		return true, next.withRequest(in.requestID, specRequest{userID: in.userID, fate: fateAccepted, reservationID: r.id})
	case isError(out, http.StatusConflict, "ALREADY_PURCHASED"):
		return live >= 0 && out.body.ReservationID == s.reservations[live].id, s
	case isError(out, http.StatusConflict, "SUBJECT_LIMIT"):
		return live < 0 && s.overCap(in.device), s
	case isError(out, http.StatusConflict, "SOLD_OUT"):
		if s.available() > 0 {
			return false, s
		}
		return true, s.withRequest(in.requestID, specRequest{userID: in.userID, fate: fateMaybeSoldOut})
	}
	return false, s
}

// acceptedAnswer reports whether out is the 202 of reservation r, as first
// given: a repeat of the request_id gets the very same acceptance.
func (s specState) acceptedAnswer(r specReservation, in linInput, out linOutput) bool {
	b := out.body
	url := "/v1/reservations/" + r.id
	return out.code == http.StatusAccepted && out.raw == r.acceptance && b.ReservationID == r.id && b.RequestID == in.requestID &&
		b.State == statePending && b.TokenID == r.token && b.ExpireAt == r.expireAt &&
		b.StatusURL == url && out.location == url
}

// pay: PENDING_PAYMENT -> PAID; the same payment_id again is the same PAID
// answer; another payment_id on a PAID reservation is PAYMENT_CONFLICT and a
// payment on a CLOSED one REFUND_REQUIRED, both recorded for refund and
// neither changing the reservation. The amount is recorded as given (0
// when not given); a payment_id recorded on the reservation (its payment,
// or one for refund) repeated with another amount is PAYMENT_ID_REUSED and
// changes nothing.
func (s specState) pay(in linInput, out linOutput) (bool, specState) {
	i := s.find(in.reservationID)
	if i < 0 {
		return isError(out, http.StatusNotFound, "NOT_FOUND"), s
	}
	r := s.reservations[i]
	b := out.body
	if amount, ok := s.recordedAmount(r, in.paymentID); ok && amount != in.amount {
		return isError(out, http.StatusUnprocessableEntity, "PAYMENT_ID_REUSED"), s
	}
	paidAnswer := out.code == http.StatusOK && b.State == statePaid && b.ReservationID == r.id
	switch {
	case r.state == statePending:
		if !paidAnswer || b.PaymentID != in.paymentID || b.PaidAt == "" {
			return false, s
		}
		r.state, r.paymentID, r.paidAt, r.amount = statePaid, in.paymentID, b.PaidAt, in.amount
		return true, s.withReservation(i, r)
	case r.state == statePaid && in.paymentID == r.paymentID:
		return paidAnswer && b.PaymentID == r.paymentID && b.PaidAt == r.paidAt, s
	case r.state == statePaid:
		if !isError(out, http.StatusConflict, "PAYMENT_CONFLICT") || b.ReservationID != r.id {
			return false, s
		}
		return true, s.withRefund(r.id, in.paymentID, in.amount)
	default: // CLOSED: never resurrected
		if !isError(out, http.StatusConflict, "REFUND_REQUIRED") || b.ReservationID != r.id {
			return false, s
		}
		return true, s.withRefund(r.id, in.paymentID, in.amount)
	}
}

// cancel: PENDING_PAYMENT -> CLOSED (the token goes back); CLOSED again
// answers the same; a PAID reservation is NOT_CLOSABLE.
func (s specState) cancel(in linInput, out linOutput) (bool, specState) {
	i := s.find(in.reservationID)
	if i < 0 {
		return isError(out, http.StatusNotFound, "NOT_FOUND"), s
	}
	r := s.reservations[i]
	b := out.body
	closedAnswer := out.code == http.StatusOK && b.State == stateClosed && b.ClosedReason == reasonCanceled && b.ReservationID == r.id
	switch r.state {
	case statePending:
		if !closedAnswer {
			return false, s
		}
		r.state = stateClosed
		return true, s.withReservation(i, r)
	case stateClosed:
		return closedAnswer, s
	default:
		return isError(out, http.StatusConflict, "NOT_CLOSABLE") && b.ReservationID == r.id, s
	}
}

// viewMatches reports whether b renders reservation r as it is now.
func (s specState) viewMatches(r specReservation, b linAnswer) bool {
	closedReason := ""
	if r.state == stateClosed {
		closedReason = reasonCanceled
	}
	return b.ReservationID == r.id && b.RequestID == r.requestID && b.UserID == r.userID && b.State == r.state &&
		b.TokenID == r.token && b.ExpireAt == r.expireAt && b.CreatedAt != "" &&
		b.PaymentID == r.paymentID && b.PaidAt == r.paidAt &&
		b.ClosedReason == closedReason && (b.ClosedAt != "") == (r.state == stateClosed) &&
		b.RefundRequired == s.refundRequired(r.id)
}

// lookup: what became of a request_id (404 while nothing is recorded).
func (s specState) lookup(in linInput, out linOutput) (bool, specState) {
	q, known := s.requests[in.requestID]
	notFound := isError(out, http.StatusNotFound, "NOT_FOUND")
	b := out.body
	answered := out.code == http.StatusOK && b.RequestID == in.requestID
	soldOut := answered && b.Outcome == "SOLD_OUT" && b.ReservationID == "" && b.Reservation == nil
	switch {
	case !known:
		return notFound, s
	case q.fate == fateAccepted:
		r := s.reservations[s.find(q.reservationID)]
		return answered && b.Outcome == "ACCEPTED" && b.ReservationID == r.id && b.Reservation != nil && s.viewMatches(r, *b.Reservation), s
	case q.fate == fateSoldOut:
		return soldOut, s
	case soldOut: // a maybe, now known recorded
		return true, s.withRequest(in.requestID, specRequest{userID: q.userID, fate: fateSoldOut})
	case notFound: // a maybe, now known not recorded
		return true, s.withoutRequest(in.requestID)
	}
	return false, s
}

// statusAllowed reports whether status is the coarse status of s. With
// stock left it depends on load (OPEN, THROTTLED or QUEUE_FULL); without,
// on whether a pending reservation may still give its token back.
func (s specState) statusAllowed(status string) bool {
	pending, _, _ := s.counts()
	switch {
	case s.available() > 0:
		return status == "OPEN" || status == "THROTTLED" || status == "QUEUE_FULL"
	case pending > 0:
		return status == "TEMP_SOLD_OUT"
	}
	return status == "FINAL_SOLD_OUT"
}

// audit: the exact counts, sale_limit = available + reserved + confirmed,
// and no violation; durable_rejections lies between the SOLD_OUTs known
// recorded and those that may be (exact once a sweep's lookups have settled
// them all). Settling open ones from the count, when it equals either end,
// made states depend on which concurrent SOLD_OUTs came before the audit,
// and the checker's search blow up.
func (s specState) audit(out linOutput) (bool, specState) {
	b := out.body
	pending, paid, closed := s.counts()
	ok := out.code == http.StatusOK && b.InvariantOK && len(b.Violations) == 0 &&
		b.SaleLimit == s.saleLimit && b.Available == s.available() && b.Reserved == pending && b.Confirmed == paid &&
		b.SaleLimit == b.Available+b.Reserved+b.Confirmed &&
		len(b.States) == 3 && b.States[statePending] == pending && b.States[statePaid] == paid && b.States[stateClosed] == closed &&
		b.HeldClosed == 0 && b.RefundsRequired == len(s.refunds) && b.Reservations == len(s.reservations)
	return ok && b.Rejected >= s.soldOutKnown && b.Rejected <= s.soldOutKnown+s.soldOutMaybe, s
}

// equal reports whether two states are the same.
func (s specState) equal(o specState) bool {
	if s.saleLimit != o.saleLimit || s.maxUnpaid != o.maxUnpaid || s.soldOutKnown != o.soldOutKnown || s.soldOutMaybe != o.soldOutMaybe ||
		len(s.requests) != len(o.requests) || !slices.Equal(s.reservations, o.reservations) || !slices.Equal(s.refunds, o.refunds) {
		return false
	}
	for k, v := range s.requests {
		if w, ok := o.requests[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// hashSeed makes hash stable within the process (porcupine only compares
// hashes of one run).
var hashSeed = maphash.MakeSeed()

// hash hashes part of what equal compares, so equal states hash alike: the
// reservations' ids and states, and the sizes of the rest.
func (s specState) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	for _, r := range s.reservations {
		h.WriteString(r.id)
		h.WriteString(r.state)
	}
	for _, n := range []int{s.saleLimit, len(s.refunds), len(s.requests), s.soldOutKnown, s.soldOutMaybe} {
		h.WriteByte(byte(n))
		h.WriteByte(byte(n >> 8))
	}
	return h.Sum64()
}

// String renders the state for the visualization.
func (s specState) String() string {
	var b strings.Builder
	pending, paid, closed := s.counts()
	fmt.Fprintf(&b, "available %d, pending %d, paid %d, closed %d; SOLD_OUT recorded %d, maybe %d; refunds %d",
		s.available(), pending, paid, closed, s.soldOutKnown, s.soldOutMaybe, len(s.refunds))
	for _, r := range s.reservations {
		fmt.Fprintf(&b, "\n%s %s %s token %d %s", shortID(r.id), r.userID, r.requestID, r.token, r.state)
		if r.paymentID != "" {
			fmt.Fprintf(&b, " by %s", r.paymentID)
		}
	}
	return b.String()
}

// shortID keeps the seq and the tag's start of a reservation id.
func shortID(id string) string {
	parts := strings.Split(id, "~")
	if len(parts) != 4 || len(parts[3]) < 4 {
		return id
	}
	return "#" + parts[2] + "~" + parts[3][:4]
}

// describe renders one operation for the visualization.
func describe(in linInput, out linOutput) string {
	var args string
	switch in.kind {
	case linReserve:
		args = in.requestID + ", " + in.userID
		if in.pass != "" {
			args += ", pass of " + in.passUser
			if in.device != "" {
				args += " on " + in.device
			}
		}
	case linPay:
		args = shortID(in.reservationID) + ", " + in.paymentID
		if in.hasAmount {
			args += fmt.Sprintf(", %d", in.amount)
		}
	case linCancel, linGet:
		args = shortID(in.reservationID)
	case linLookup:
		args = in.requestID
	}
	b := out.body
	answer := b.Error
	switch {
	case answer != "":
	case b.Outcome != "":
		answer = b.Outcome
	case b.State != "":
		answer = b.State
	case b.Status != "":
		answer = b.Status
	}
	if b.ReservationID != "" {
		answer += " " + shortID(b.ReservationID)
	}
	if in.kind == linReserve && out.code == http.StatusAccepted {
		answer += fmt.Sprintf(" token %d", b.TokenID)
	}
	if in.kind == linAudit {
		answer = fmt.Sprintf("available %d reserved %d confirmed %d rejections %d", b.Available, b.Reserved, b.Confirmed, b.Rejected)
	}
	return fmt.Sprintf("%s(%s) -> %d %s", in.kind, args, out.code, answer)
}

// renderHistory lists the operations by call time, one a line.
func renderHistory(model porcupine.Model, history []porcupine.Operation) string {
	ops := append([]porcupine.Operation(nil), history...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "client %2d  [%10d, %10d] ns  %s  %s\n", op.ClientId, op.Call, op.Return,
			model.DescribeOperation(op.Input, op.Output), op.Output.(linOutput).raw)
	}
	return b.String()
}

// linModel is the specification as a porcupine model of one SKU with
// saleLimit tokens and a cap of maxUnpaid unpaid reservations per device
// (0: none). It is not partitioned: every operation on the SKU may bear on
// every other (the stock, the user's purchase, the request_id, the device).
func linModel(saleLimit, maxUnpaid int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return newSpecState(saleLimit, maxUnpaid) },
		Step: func(state, input, output any) (bool, any) {
			return state.(specState).step(input.(linInput), output.(linOutput))
		},
		Equal:             func(a, b any) bool { return a.(specState).equal(b.(specState)) },
		Hash:              func(state any) uint64 { return state.(specState).hash() },
		DescribeOperation: func(input, output any) string { return describe(input.(linInput), output.(linOutput)) },
		DescribeState:     func(state any) string { return state.(specState).String() },
	}
}
