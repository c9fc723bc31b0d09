package bench

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// maxLedgerExamples bounds the examples a ledger report lists per problem.
const maxLedgerExamples = 5

// Ledger remembers, on the client side, which reservation each request got,
// so that a run can prove what the server must never do: sell a unit beyond
// the SKU's sale_limit, give one user two reservations, hand one token to two
// reservations, or answer a resent request_id differently.
type Ledger struct {
	mu      sync.Mutex
	plan    *Plan
	accepts []acceptance
	// refusals of request numbers that the plan resends; other refusals
	// cannot be contradicted and are not kept.
	refusals map[int64]Outcome
}

type acceptance struct {
	request       int64
	user          int64
	sku           int
	reservationID string
	tokenID       string
	expireAt      time.Time
}

// AcceptedReservation is one distinct reservation the clients were given.
type AcceptedReservation struct {
	// Request and User number the request and its user.
	Request, User int64
	// SKU indexes the SKU.
	SKU int
	// ReservationID and TokenID are as the server answered.
	ReservationID, TokenID string
	// ExpireAt is the answer's expire_at (zero when absent).
	ExpireAt time.Time
}

// Accepted returns each distinct accepted reservation once, in the order
// the answers arrived.
func (l *Ledger) Accepted() []AcceptedReservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make(map[string]bool, len(l.accepts))
	out := make([]AcceptedReservation, 0, len(l.accepts))
	for _, a := range l.accepts {
		if a.reservationID == "" || seen[a.reservationID] {
			continue
		}
		seen[a.reservationID] = true
		out = append(out, AcceptedReservation{Request: a.request, User: a.user, SKU: a.sku,
			ReservationID: a.reservationID, TokenID: a.tokenID, ExpireAt: a.expireAt})
	}
	return out
}

// NewLedger returns an empty ledger for the plan.
func NewLedger(plan *Plan) *Ledger {
	return &Ledger{plan: plan, refusals: make(map[int64]Outcome)}
}

// Note records one answer. Only definitive answers matter.
func (l *Ledger) Note(attempt Attempt, reply Reply) {
	switch {
	case reply.Outcome == OutcomeAccepted:
		l.mu.Lock()
		l.accepts = append(l.accepts, acceptance{
			request:       attempt.Request,
			user:          attempt.User,
			sku:           attempt.SKU,
			reservationID: reply.ReservationID,
			tokenID:       reply.TokenID,
			expireAt:      reply.ExpireAt,
		})
		l.mu.Unlock()
	case reply.Outcome.Definitive() && l.plan != nil && l.plan.Retried(attempt.Request):
		l.mu.Lock()
		l.refusals[attempt.Request] = reply.Outcome
		l.mu.Unlock()
	}
}

// tokenKey names a token within its SKU.
type tokenKey struct {
	sku   int
	token string
}

// LedgerReport is what the ledger proves after a run.
type LedgerReport struct {
	// AcceptedBySKU counts distinct accepted reservation ids per SKU index.
	AcceptedBySKU []int64
	// Accepted is the total of AcceptedBySKU.
	Accepted int64
	// Oversold counts accepted reservations beyond each SKU's sale_limit.
	Oversold int64
	// DuplicateWinners counts users holding more than one distinct reservation.
	DuplicateWinners int64
	// TokenReused counts token ids bound to more than one reservation.
	TokenReused int64
	// RetryMismatches counts request ids answered with two different
	// reservation ids, or accepted once and refused another time.
	RetryMismatches int64
	// MissingReservationID counts 202 answers without a reservation id.
	MissingReservationID int64
	// Examples lists a few offending ids for each problem.
	Examples []string
}

// Check analyses the ledger. saleLimit returns the limit of a SKU index.
func (l *Ledger) Check(skus int, saleLimit func(sku int) int64) LedgerReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	if skus < 1 {
		skus = 1
	}
	report := LedgerReport{AcceptedBySKU: make([]int64, skus)}
	seen := make(map[string]int) // reservation id -> sku
	byUser := make(map[int64]map[string]struct{})
	byRequest := make(map[int64]string)
	byToken := make(map[tokenKey]string) // tokens are unique within a SKU

	examples := map[string]int{}
	example := func(kind, text string) {
		if examples[kind] < maxLedgerExamples {
			examples[kind]++
			report.Examples = append(report.Examples, kind+": "+text)
		}
	}
	for _, a := range l.accepts {
		if a.reservationID == "" {
			report.MissingReservationID++
			example("missing_reservation_id", fmt.Sprintf("request %d", a.request))
			continue
		}
		if first, ok := byRequest[a.request]; ok && first != a.reservationID {
			report.RetryMismatches++
			example("retry_mismatch", fmt.Sprintf("request %d got %s and %s", a.request, first, a.reservationID))
		} else if !ok {
			byRequest[a.request] = a.reservationID
		}
		if _, ok := seen[a.reservationID]; ok {
			continue // the same reservation answered again (a retry): not a new unit
		}
		seen[a.reservationID] = a.sku
		if a.sku >= 0 && a.sku < skus {
			report.AcceptedBySKU[a.sku]++
		}
		users := byUser[a.user]
		if users == nil {
			users = make(map[string]struct{}, 1)
			byUser[a.user] = users
		}
		users[a.reservationID] = struct{}{}
		if a.tokenID != "" {
			key := tokenKey{sku: a.sku, token: a.tokenID}
			if holder, ok := byToken[key]; ok && holder != a.reservationID {
				report.TokenReused++
				example("token_reused", fmt.Sprintf("sku %d token %s held by %s and %s", a.sku, a.tokenID, holder, a.reservationID))
			} else {
				byToken[key] = a.reservationID
			}
		}
	}
	for request, outcome := range l.refusals {
		if reservation, ok := byRequest[request]; ok {
			report.RetryMismatches++
			example("retry_mismatch", fmt.Sprintf("request %d accepted as %s and also answered %s", request, reservation, outcome))
		}
	}
	for sku, accepted := range report.AcceptedBySKU {
		report.Accepted += accepted
		if limit := saleLimit(sku); accepted > limit {
			report.Oversold += accepted - limit
			example("oversold", fmt.Sprintf("sku %d accepted %d > sale_limit %d", sku, accepted, limit))
		}
	}
	users := make([]int64, 0)
	for user, reservations := range byUser {
		if len(reservations) > 1 {
			users = append(users, user)
		}
	}
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	report.DuplicateWinners = int64(len(users))
	for _, user := range users {
		example("duplicate_winner", fmt.Sprintf("user u%d holds %d reservations", user, len(byUser[user])))
	}
	sort.Strings(report.Examples)
	return report
}
