package bench

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// maxLedgerExamples bounds the examples a ledger report lists per problem.
const maxLedgerExamples = 5

// Ledger remembers, on the client side, which reservation each request got,
// so that a run can prove what the server must never do: sell a unit beyond
// the SKU's sale_limit, give one user two reservations, hand one token to two
// reservations at once, or answer a resent request_id differently.
//
// Workers note into their own shard (worker modulo ledgerShards) and each
// answer keeps its arrival time; readers merge the shards in arrival order.
// What a shard keeps holds no pointers (ids are copied into byte chunks),
// so millions of acceptances cost the garbage collector nothing to scan
// while the load runs.
type Ledger struct {
	plan   *Plan
	base   time.Time // arrival times are kept as monotonic offsets from base
	shards [ledgerShards]ledgerShard

	// units counts the distinct requests accepted so far (units sold),
	// for the live progress; a request the plan resends is counted once,
	// by retried (under retriedMu), the only requests answered ACCEPTED twice.
	units     atomic.Int64
	retriedMu sync.Mutex
	retried   map[int64]bool

	// soldOutNotFinal: a SOLD_OUT does not decide its request_id (celled
	// SKUs: a cell's SOLD_OUT is never final, a top-up or another cell's
	// return may bring stock back), so one later accepted is no mismatch.
	soldOutNotFinal bool
}

// Ledger shards and the chunks they keep acceptances and ids in.
const (
	ledgerShards = 64
	// acceptChunk is the length of one chunk of acceptances, textChunk the
	// size of one chunk of ids: a shard grows by new chunks and never
	// copies what it holds.
	acceptChunk = 1024
	textChunk   = 64 << 10
	// maxNotedID bounds the reservation and token ids a ledger keeps
	// (longer ones are cut; real ones are tens of bytes).
	maxNotedID = 1024
)

// ledgerShard is the part of a ledger that some workers note into.
type ledgerShard struct {
	mu sync.Mutex
	// accepts holds the shard's acceptances in the order noted, in chunks
	// of acceptChunk (only the last one is not full).
	accepts [][]acceptance
	// text holds the acceptances' ids back to back, in chunks of textChunk.
	text [][]byte
	// refusals of request numbers that the plan resends; other refusals
	// cannot be contradicted and are not kept.
	refusals map[int64]refusal
	_        [cacheLine]byte
}

// acceptance is one ACCEPTED answer, without pointers: its ids lie in the
// shard's text chunk textChunkIndex at textOffset, the reservation id
// first, then the token id.
type acceptance struct {
	at             time.Duration // arrival, since the ledger's base
	request, user  int64
	expireAtNs     int64 // the answer's expire_at in Unix ns, 0 when absent
	sku            int32
	textChunkIndex uint32
	textOffset     uint32
	idLen, tokLen  uint16
}

// refusal is the last definitive refusal of a resent request number.
type refusal struct {
	at      time.Duration // arrival, since the ledger's base
	outcome Outcome
}

// notedAcceptance is an acceptance with its ids read back, for analysis
// after the load: the reservation and when its answer arrived.
type notedAcceptance struct {
	at time.Duration
	AcceptedReservation
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
	distinct := l.distinctArrivals()
	out := make([]AcceptedReservation, len(distinct))
	for i, a := range distinct {
		out[i] = a.AcceptedReservation
	}
	return out
}

// LastUnitAt returns when the last distinct reservation was first
// accepted; false when none was.
func (l *Ledger) LastUnitAt() (time.Time, bool) {
	distinct := l.distinctArrivals()
	if len(distinct) == 0 {
		return time.Time{}, false
	}
	return l.base.Add(distinct[len(distinct)-1].at), true
}

// Units returns the distinct requests accepted so far: the units sold, as
// against the ACCEPTED answers (a resent request is answered again).
func (l *Ledger) Units() int64 { return l.units.Load() }

// distinctArrivals returns each distinct accepted reservation's first
// answer, in arrival order.
func (l *Ledger) distinctArrivals() []notedAcceptance {
	l.lock()
	defer l.unlock()
	accepts := l.arrivals()
	seen := make(map[string]bool, len(accepts))
	out := make([]notedAcceptance, 0, len(accepts))
	for _, a := range accepts {
		if a.ReservationID == "" || seen[a.ReservationID] {
			continue
		}
		seen[a.ReservationID] = true
		out = append(out, a)
	}
	return out
}

// countUnit counts an ACCEPTED answer to request as a unit unless the
// request was accepted before.
func (l *Ledger) countUnit(request int64) {
	if l.plan != nil && l.plan.Retried(request) {
		l.retriedMu.Lock()
		if l.retried == nil {
			l.retried = make(map[int64]bool)
		}
		first := !l.retried[request]
		l.retried[request] = true
		l.retriedMu.Unlock()
		if !first {
			return
		}
	}
	l.units.Add(1)
}

// NewLedger returns an empty ledger for the plan.
func NewLedger(plan *Plan) *Ledger {
	return &Ledger{plan: plan, base: time.Now()}
}

// SoldOutNotFinal makes the ledger keep no SOLD_OUT as a request_id's
// answer: a celled SKU's cell answers SOLD_OUT while it waits for a
// top-up, and the same request_id may be accepted once it came
// (docs/cells.md). Call it before the first Note.
func (l *Ledger) SoldOutNotFinal() { l.soldOutNotFinal = true }

// Note records one answer, which arrived at at, into the worker's shard.
// Only definitive answers matter.
func (l *Ledger) Note(worker int, at time.Time, attempt Attempt, reply Reply) {
	shard := &l.shards[worker%ledgerShards]
	switch {
	case reply.Outcome == OutcomeSoldOut && l.soldOutNotFinal:
	case reply.Outcome == OutcomeAccepted:
		l.countUnit(attempt.Request)
		shard.mu.Lock()
		shard.note(acceptance{at: at.Sub(l.base), request: attempt.Request, user: attempt.User,
			expireAtNs: unixNanoOrZero(reply.ExpireAt), sku: int32(attempt.SKU)}, reply.ReservationID, reply.TokenID)
		shard.mu.Unlock()
	case reply.Outcome.Definitive() && l.plan != nil && l.plan.Retried(attempt.Request):
		shard.mu.Lock()
		if shard.refusals == nil {
			shard.refusals = make(map[int64]refusal)
		}
		shard.refusals[attempt.Request] = refusal{at: at.Sub(l.base), outcome: reply.Outcome}
		shard.mu.Unlock()
	}
}

// note appends a to the shard with its ids; the caller holds s.mu.
func (s *ledgerShard) note(a acceptance, reservationID, tokenID string) {
	reservationID, tokenID = reservationID[:min(len(reservationID), maxNotedID)], tokenID[:min(len(tokenID), maxNotedID)]
	size := len(reservationID) + len(tokenID)
	last := len(s.text) - 1
	if last < 0 || len(s.text[last])+size > cap(s.text[last]) {
		s.text = append(s.text, make([]byte, 0, textChunk))
		last++
	}
	a.textChunkIndex, a.textOffset = uint32(last), uint32(len(s.text[last]))
	a.idLen, a.tokLen = uint16(len(reservationID)), uint16(len(tokenID))
	s.text[last] = append(append(s.text[last], reservationID...), tokenID...)

	chunk := len(s.accepts) - 1
	if chunk < 0 || len(s.accepts[chunk]) == acceptChunk {
		s.accepts = append(s.accepts, make([]acceptance, 0, acceptChunk))
		chunk++
	}
	s.accepts[chunk] = append(s.accepts[chunk], a)
}

// read returns a with its ids copied out of the shard's text.
func (s *ledgerShard) read(a *acceptance) notedAcceptance {
	text := s.text[a.textChunkIndex][a.textOffset:]
	n := notedAcceptance{at: a.at, AcceptedReservation: AcceptedReservation{Request: a.request, User: a.user, SKU: int(a.sku),
		ReservationID: string(text[:a.idLen]), TokenID: string(text[a.idLen : a.idLen+a.tokLen])}}
	if a.expireAtNs != 0 {
		n.ExpireAt = time.Unix(0, a.expireAtNs)
	}
	return n
}

// unixNanoOrZero returns t in Unix ns, 0 for the zero time.
func unixNanoOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// lock takes every shard's lock, in order.
func (l *Ledger) lock() {
	for i := range l.shards {
		l.shards[i].mu.Lock()
	}
}

// unlock releases every shard's lock.
func (l *Ledger) unlock() {
	for i := range l.shards {
		l.shards[i].mu.Unlock()
	}
}

// arrivals returns every acceptance in the order the answers arrived: by
// arrival time, and at equal times by shard and then in the order noted.
// The caller holds every shard's lock.
func (l *Ledger) arrivals() []notedAcceptance {
	type ref struct {
		at    time.Duration
		a     *acceptance
		shard *ledgerShard
	}
	var refs []ref
	for i := range l.shards {
		shard := &l.shards[i]
		for _, chunk := range shard.accepts {
			for j := range chunk {
				refs = append(refs, ref{at: chunk[j].at, a: &chunk[j], shard: shard})
			}
		}
	}
	slices.SortStableFunc(refs, func(x, y ref) int { return cmp.Compare(x.at, y.at) })
	out := make([]notedAcceptance, len(refs))
	for i, r := range refs {
		out[i] = r.shard.read(r.a)
	}
	return out
}

// refusals returns the last definitive refusal of each resent request
// number, over all shards. The caller holds every shard's lock.
func (l *Ledger) refusals() map[int64]Outcome {
	latest := make(map[int64]refusal)
	for i := range l.shards {
		for request, r := range l.shards[i].refusals {
			if seen, ok := latest[request]; !ok || r.at >= seen.at {
				latest[request] = r
			}
		}
	}
	out := make(map[int64]Outcome, len(latest))
	for request, r := range latest {
		out[request] = r.outcome
	}
	return out
}

// tokenKey names a token within its SKU.
type tokenKey struct {
	sku   int
	token string
}

// TokenHandover is a token handed from one reservation to the next after
// the first one's expire_at, which release_on_close allows once the first
// is CLOSED. The ledger sees only the answers, not that close: a caller that
// reads the final states checks it (payflow).
type TokenHandover struct {
	// SKU indexes the SKU; Token is the token id.
	SKU   int
	Token string
	// Earlier held the token first; Later was given it at LaterCreatedAt
	// (server time: its expire_at less the payment window), at or after
	// Earlier's expire_at.
	Earlier, Later string
	LaterCreatedAt time.Time
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
	// TokenReused counts tokens handed to a reservation while an earlier
	// one may still have held them: before its expire_at, or at all when
	// tokens are not released (a payment window of 0) or an answer has no
	// expire_at to prove the release. The ledger does not see cancels: a
	// token a cancel released early counts here (no scenario cancels while
	// it reserves).
	TokenReused int64
	// TokenHandovers lists the tokens handed on after an expire_at, in
	// (SKU, token, server time) order.
	TokenHandovers []TokenHandover
	// RetryMismatches counts request ids answered with two different
	// reservation ids, or accepted once and refused another time.
	RetryMismatches int64
	// MissingReservationID counts 202 answers without a reservation id.
	MissingReservationID int64
	// Examples lists a few offending ids for each problem.
	Examples []string
}

// Check analyses the ledger. saleLimit returns the limit of a SKU index.
// paymentWindow is the campaigns' payment window when they release the
// token of a closed unpaid reservation (release_on_close), 0 when tokens
// are never released: then a token given to two reservations is reused,
// whenever it happened.
func (l *Ledger) Check(skus int, saleLimit func(sku int) int64, paymentWindow time.Duration) LedgerReport {
	l.lock()
	defer l.unlock()
	if skus < 1 {
		skus = 1
	}
	report := LedgerReport{AcceptedBySKU: make([]int64, skus)}
	accepts := l.arrivals()
	seen := make(map[string]int, len(accepts)) // reservation id -> sku
	byRequest := make(map[int64]string, len(accepts))
	// A token's first holder, as an index into accepts (tokens are unique
	// within a SKU); the tokens with more than one holder also get the list
	// of them (release_on_close hands tokens on; without it, only a broken
	// server).
	byToken := make(map[tokenKey]int, len(accepts))
	moreOfToken := make(map[tokenKey][]int)
	// A user's first reservation; the users with more than one distinct
	// reservation also get the set of them (rare: only a broken server).
	firstOfUser := make(map[int64]string, len(accepts))
	moreOfUser := make(map[int64]map[string]struct{})

	examples := map[string]int{}
	example := func(kind, text string) {
		if examples[kind] < maxLedgerExamples {
			examples[kind]++
			report.Examples = append(report.Examples, kind+": "+text)
		}
	}
	for index, a := range accepts {
		if a.ReservationID == "" {
			report.MissingReservationID++
			example("missing_reservation_id", fmt.Sprintf("request %d", a.Request))
			continue
		}
		if first, ok := byRequest[a.Request]; ok && first != a.ReservationID {
			report.RetryMismatches++
			example("retry_mismatch", fmt.Sprintf("request %d got %s and %s", a.Request, first, a.ReservationID))
		} else if !ok {
			byRequest[a.Request] = a.ReservationID
		}
		if _, ok := seen[a.ReservationID]; ok {
			continue // the same reservation answered again (a retry): not a new unit
		}
		seen[a.ReservationID] = a.SKU
		if a.SKU >= 0 && a.SKU < skus {
			report.AcceptedBySKU[a.SKU]++
		}
		if first, ok := firstOfUser[a.User]; !ok {
			firstOfUser[a.User] = a.ReservationID
		} else if first != a.ReservationID {
			more := moreOfUser[a.User]
			if more == nil {
				more = map[string]struct{}{first: {}}
				moreOfUser[a.User] = more
			}
			more[a.ReservationID] = struct{}{}
		}
		if a.TokenID != "" {
			key := tokenKey{sku: a.SKU, token: a.TokenID}
			if first, ok := byToken[key]; !ok {
				byToken[key] = index
			} else if more := moreOfToken[key]; more == nil {
				moreOfToken[key] = []int{first, index}
			} else {
				moreOfToken[key] = append(more, index)
			}
		}
	}
	keys := make([]tokenKey, 0, len(moreOfToken))
	for key := range moreOfToken {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(x, y tokenKey) int { return cmp.Or(cmp.Compare(x.sku, y.sku), cmp.Compare(x.token, y.token)) })
	for _, key := range keys {
		holders := moreOfToken[key]
		// In server order: expire_at is the creation time plus the window.
		slices.SortStableFunc(holders, func(x, y int) int { return accepts[x].ExpireAt.Compare(accepts[y].ExpireAt) })
		for i := 1; i < len(holders); i++ {
			earlier, later := &accepts[holders[i-1]], &accepts[holders[i]]
			laterCreatedAt := later.ExpireAt.Add(-paymentWindow)
			if paymentWindow > 0 && !earlier.ExpireAt.IsZero() && !later.ExpireAt.IsZero() && !laterCreatedAt.Before(earlier.ExpireAt) {
				report.TokenHandovers = append(report.TokenHandovers, TokenHandover{SKU: key.sku, Token: key.token,
					Earlier: earlier.ReservationID, Later: later.ReservationID, LaterCreatedAt: laterCreatedAt})
				continue
			}
			report.TokenReused++
			example("token_reused", fmt.Sprintf("sku %d token %s held by %s (expire_at %s) and %s (expire_at %s)", key.sku, key.token,
				earlier.ReservationID, formatTimeOrNone(earlier.ExpireAt), later.ReservationID, formatTimeOrNone(later.ExpireAt)))
		}
	}
	for request, outcome := range l.refusals() {
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
	users := make([]int64, 0, len(moreOfUser))
	for user := range moreOfUser {
		users = append(users, user)
	}
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	report.DuplicateWinners = int64(len(users))
	for _, user := range users {
		example("duplicate_winner", fmt.Sprintf("user u%d holds %d reservations", user, len(moreOfUser[user])))
	}
	sort.Strings(report.Examples)
	return report
}

// formatTimeOrNone formats t as the API does, "none" for the zero time.
func formatTimeOrNone(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return FormatTime(t)
}
