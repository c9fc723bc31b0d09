// Package purchase holds the pure rule of a campaign whose purchase_limit
// is "campaign": at most one live purchase (PENDING_PAYMENT or
// PAID) per (campaign, user) over all the campaign's SKUs, although each
// SKU is decided by its own actor and log.
//
// A Registry is the campaign's lock table, user -> claim. A claim names the
// one SKU that holds, or may hold, the user's live purchase; a reserve of
// the user goes to a SKU only while the registry says that SKU is the one
// (Claim answers Proceed), so no two SKUs ever decide a purchase of the
// same user. On a lottery SKU the entry is the purchase attempt: an entry
// claims its user like a reserve, and its hold stays while the entry may
// still win (ENTERED, WAITLISTED), becomes the reservation it won (WON),
// and ends when it has LOST (at DRAW_DONE, or LOTTERY_ENDED at end_at).
// The draw then never gives a user a reservation while the user holds a
// purchase on another SKU, and a user enters one lottery of the campaign
// at a time. The registry has no log of its own: what it must keep across
// a crash, the live reservations, is in the SKUs' logs, and the engine
// rebuilds it from their states (Resync). A crash loses only claims whose
// reserves were never acknowledged.
//
// A claim is released only on knowledge, never on a guess:
//   - a reserve granted to a SKU ended with a definite answer that made no
//     reservation (Done with unknown false, nothing held);
//   - the close of the held reservation is durable (Closed), or the held
//     entry's loss (EntryEnded);
//   - a reserve whose answer was lost (a timeout, a log failure) was looked
//     up afterwards on its SKU, behind it in the SKU's mailbox, and left
//     no live reservation (Probe, then ProbeDone).
//
// Like the SKU core it has no I/O, no clock and no goroutines: the engine
// (package actors) calls it under a mutex and hands the waiters it returns
// their wake-up. W is the engine's waiter (a channel), opaque here. The
// protocol's order around one reserve (claim, run or answer, report, look
// up lost answers) is Attempt's (attempt.go), stepped alike by the engine
// and the simulator.
package purchase

// Limits per user; every list of a claim is bounded.
const (
	// MaxWaiters bounds the reserves of one user waiting for the answer
	// of a pending claim on another SKU; beyond it Claim answers Busy (HTTP
	// 429 QUEUE_FULL, as the other queues).
	MaxWaiters = 8
	// MaxInFlight bounds the reserves of one user granted to its claim's
	// SKU at once (the HTTP ingress sends one per SKU and user at a time);
	// beyond it Claim answers Busy.
	MaxInFlight = 64
	// MaxUnknown is how many lost answers a claim remembers: a reserve of
	// the user on the claim's own SKU with this many asks for a Probe
	// first. A claim holds at most MaxUnknown + MaxInFlight of them.
	MaxUnknown = 16
)

// Verdict is Claim's answer.
type Verdict uint8

// Verdicts.
const (
	// Proceed: send the reserve to its SKU, then call Done.
	Proceed Verdict = iota + 1
	// Held: another SKU holds the user's live purchase (Decision.SKU,
	// Decision.ReservationID): answer ALREADY_PURCHASED, unrecorded; or
	// the user's lottery entry that may still win (Decision.SKU,
	// Decision.EntryRequestID): ALREADY_ENTERED, unrecorded.
	Held
	// Wait: a reserve on another SKU is being decided; the waiter was
	// registered and is returned by the call that settles it; then ask
	// again. A waiter that gives up calls Forget.
	Wait
	// Probe: answers of reserves on Decision.SKU were lost: look up each
	// of Decision.RequestIDs on that SKU (through its mailbox, behind the
	// lost calls), then call ProbeDone, then ask again.
	Probe
	// Busy: too many reserves of this user wait or are in flight: refuse
	// (nothing decided).
	Busy
)

func (v Verdict) String() string {
	names := [...]string{"", "PROCEED", "HELD", "WAIT", "PROBE", "BUSY"}
	if int(v) < len(names) && v != 0 {
		return names[v]
	}
	return "Verdict(?)"
}

// Decision is Claim's answer with what it names.
type Decision struct {
	Verdict        Verdict
	SKU            string   // Held, Probe, Wait: the claim's SKU
	ReservationID  string   // Held by a purchase: the live reservation
	EntryRequestID string   // Held by a lottery entry: its request_id
	RequestIDs     []string // Probe: the request_ids whose answers were lost
}

// claim is the user's claim on one SKU.
type claim[W comparable] struct {
	sku      string
	inFlight int      // reserves granted (Proceed) and not Done, and a probe running
	probing  bool     // a Probe was handed out and is not done
	unknown  []string // request_ids granted whose answers were lost
	// held is what the SKU holds for the user ("" for nothing known): the
	// live reservation's id, or with entry the request_id of a lottery
	// entry that may still win. Set by Reserved, Entered and Resync,
	// cleared by Closed and EntryEnded.
	held    string
	entry   bool
	waiters []W
	// extra are holds of the user on other SKUs, learned although the
	// claim is on sku (a conflict: a second live purchase the rule never
	// lets happen, which only a restore of one SKU alone brings back). They
	// are kept so that the user stays held until all of them end: when
	// the claim's own hold ends, the first becomes the claim's.
	extra []otherHold
}

// otherHold is one of a claim's extra holds.
type otherHold struct {
	sku, id string
	entry   bool
}

func (c *claim[W]) idle() bool {
	return c.inFlight == 0 && !c.probing && len(c.unknown) == 0 && c.held == "" && len(c.extra) == 0
}

// addExtra records a hold on another SKU than the claim's (one per SKU).
func (c *claim[W]) addExtra(sku, id string, entry bool) {
	for i := range c.extra {
		if c.extra[i].sku == sku {
			c.extra[i] = otherHold{sku, id, entry}
			return
		}
	}
	c.extra = append(c.extra, otherHold{sku, id, entry})
}

// dropExtra removes the extra hold on sku when match accepts it; it
// reports whether one was removed.
func (c *claim[W]) dropExtra(sku string, match func(otherHold) bool) bool {
	for i, h := range c.extra {
		if h.sku == sku && match(h) {
			c.extra = append(c.extra[:i], c.extra[i+1:]...)
			return true
		}
	}
	return false
}

// promoteExtra makes the first extra hold the claim's own once the
// claim's SKU holds nothing and decides nothing for the user.
func (c *claim[W]) promoteExtra() {
	if c.held != "" || len(c.extra) == 0 || c.inFlight > 0 || c.probing || len(c.unknown) > 0 {
		return
	}
	h := c.extra[0]
	c.extra = c.extra[1:]
	c.sku, c.held, c.entry = h.sku, h.id, h.entry
}

// heldDecision is the Held answer of c.
func (c *claim[W]) heldDecision() Decision {
	if c.entry {
		return Decision{Verdict: Held, SKU: c.sku, EntryRequestID: c.held}
	}
	return Decision{Verdict: Held, SKU: c.sku, ReservationID: c.held}
}

// Registry is one campaign's purchase registry. The zero value is not
// usable: call New. Not safe for concurrent use.
type Registry[W comparable] struct {
	claims map[string]*claim[W]
}

// New returns an empty registry.
func New[W comparable]() *Registry[W] {
	return &Registry[W]{claims: make(map[string]*claim[W])}
}

// Len returns the number of users with a claim.
func (r *Registry[W]) Len() int { return len(r.claims) }

// Claim asks whether userID's reserve requestID may go to SKU sku. For
// Wait, w is registered and returned later by the call that settles the
// claim (Done, Reserved, Closed, ProbeDone, Resync).
func (r *Registry[W]) Claim(userID, sku, requestID string, w W) Decision {
	c := r.claims[userID]
	if c == nil {
		r.claims[userID] = &claim[W]{sku: sku, inFlight: 1}
		return Decision{Verdict: Proceed, SKU: sku}
	}
	if c.probing {
		return r.wait(c, w)
	}
	if c.held == "" && len(c.extra) > 0 { // an extra hold, not yet the claim's own
		h := c.extra[0]
		return (&claim[W]{sku: h.sku, held: h.id, entry: h.entry}).heldDecision()
	}
	if c.sku == sku {
		// The SKU's own rule answers: the same request_id its first
		// answer, another one ALREADY_PURCHASED while a purchase is live.
		if len(c.unknown) >= MaxUnknown {
			return r.probe(c)
		}
		if c.inFlight >= MaxInFlight {
			return Decision{Verdict: Busy, SKU: c.sku}
		}
		c.inFlight++
		return Decision{Verdict: Proceed, SKU: sku}
	}
	switch {
	case c.held != "":
		return c.heldDecision()
	case c.inFlight > 0:
		return r.wait(c, w)
	case len(c.unknown) > 0:
		return r.probe(c)
	}
	panic("purchase: an idle claim was kept") // every settling call deletes idle claims
}

func (r *Registry[W]) wait(c *claim[W], w W) Decision {
	if len(c.waiters) >= MaxWaiters {
		return Decision{Verdict: Busy, SKU: c.sku}
	}
	c.waiters = append(c.waiters, w)
	return Decision{Verdict: Wait, SKU: c.sku}
}

func (r *Registry[W]) probe(c *claim[W]) Decision {
	ids := c.unknown
	c.unknown, c.probing = nil, true
	return Decision{Verdict: Probe, SKU: c.sku, RequestIDs: ids}
}

// Done ends a reserve that Claim let proceed to sku: unknown is set when
// its answer was lost (a timeout, ErrResultUnknown), and then the claim
// stays until a Probe clears requestID. A reservation the reserve made was
// reported by Reserved before (the durable path runs before the caller
// wakes). It returns the waiters to wake.
func (r *Registry[W]) Done(userID, sku, requestID string, unknown bool) []W {
	c := r.claims[userID]
	if c == nil || c.sku != sku || c.inFlight == 0 {
		panic("purchase: Done without a granted reserve on " + sku)
	}
	c.inFlight--
	if unknown && !mutantReleaseUnknown {
		c.unknown = append(c.unknown, requestID)
	}
	return r.settle(userID, c)
}

// ProbeDone ends a Probe on sku; stillUnknown are the request_ids whose
// look-up failed too (the SKU unavailable): they stay. It returns the
// waiters to wake.
func (r *Registry[W]) ProbeDone(userID, sku string, stillUnknown []string) []W {
	c := r.claims[userID]
	if c == nil || c.sku != sku || !c.probing {
		panic("purchase: ProbeDone without a Probe on " + sku)
	}
	c.probing = false
	c.unknown = append(c.unknown, stillUnknown...)
	return r.settle(userID, c)
}

// Forget removes a waiter that gave up (its context ended).
func (r *Registry[W]) Forget(userID string, w W) {
	c := r.claims[userID]
	if c == nil {
		return
	}
	for i, x := range c.waiters {
		if x == w {
			c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
			return
		}
	}
}

// Reserved reports that a reservation of userID on sku is durable (a
// reserve's, or a lottery entry's that won: it replaces the entry's hold).
// It returns the waiters to wake (they now hear Held), and conflict set
// when the user's claim is on another SKU: a second live purchase, which
// the registry's rule never lets happen (the engine logs it; the audit
// reports it). The first claim is kept.
func (r *Registry[W]) Reserved(userID, sku, reservationID string) (wake []W, conflict bool) {
	return r.hold(userID, sku, reservationID, false)
}

// Entered reports that a lottery entry of userID on sku, requestID's, is
// durable: it holds the user's claim while it may still win. Answers as
// Reserved's.
func (r *Registry[W]) Entered(userID, sku, requestID string) (wake []W, conflict bool) {
	return r.hold(userID, sku, requestID, true)
}

func (r *Registry[W]) hold(userID, sku, id string, entry bool) (wake []W, conflict bool) {
	c := r.claims[userID]
	switch {
	case c == nil:
		r.claims[userID] = &claim[W]{sku: sku, held: id, entry: entry}
		return nil, false
	case c.sku != sku:
		c.addExtra(sku, id, entry)
		return nil, true
	}
	c.held, c.entry = id, entry
	w := c.waiters
	c.waiters = nil
	return w, false
}

// Closed reports that the close of reservation reservationID of userID on
// sku is durable (cancel, expiry, an operator's close): the user may buy
// again. It returns the waiters to wake.
func (r *Registry[W]) Closed(userID, sku, reservationID string) []W {
	return r.release(userID, sku, reservationID, false)
}

// EntryEnded reports that the lottery entry requestID of userID on sku
// lost, durably (DRAW_DONE, LOTTERY_ENDED): the user may buy again. It
// returns the waiters to wake.
func (r *Registry[W]) EntryEnded(userID, sku, requestID string) []W {
	return r.release(userID, sku, requestID, true)
}

func (r *Registry[W]) release(userID, sku, id string, entry bool) []W {
	c := r.claims[userID]
	switch {
	case c == nil:
		return nil
	case c.sku != sku:
		if c.dropExtra(sku, func(h otherHold) bool { return h.id == id && h.entry == entry }) {
			return r.settle(userID, c)
		}
		return nil
	case c.held != id || c.entry != entry:
		return nil
	}
	c.held, c.entry = "", false
	return r.settle(userID, c)
}

// Resync replaces what the registry knows of the holds of sku with the
// SKU's state as rebuilt from disk (at start, and after its log failed and
// it recovered): live (user -> reservation id, sku.Machine.LivePurchases)
// and entered (user -> request_id of a lottery entry that may still win,
// sku.Machine.LiveEntries). Claims on sku in neither lose their hold,
// users in them get one. Reserves in flight and lost answers stay as they
// are. It returns the waiters to wake and the users whose claim is on
// another SKU (conflicts, as Reserved).
func (r *Registry[W]) Resync(sku string, live, entered map[string]string) (wake []W, conflicts []string) {
	for user, c := range r.claims {
		_, isLive := live[user]
		_, isEntered := entered[user]
		if isLive || isEntered {
			continue
		}
		changed := c.dropExtra(sku, func(otherHold) bool { return true })
		if c.sku == sku && c.held != "" {
			c.held, c.entry = "", false
			changed = true
		}
		if changed {
			wake = append(wake, r.settle(user, c)...)
		}
	}
	for _, holds := range [...]struct {
		m     map[string]string
		entry bool
	}{{live, false}, {entered, true}} {
		for user, id := range holds.m {
			w, conflict := r.hold(user, sku, id, holds.entry)
			wake = append(wake, w...)
			if conflict {
				conflicts = append(conflicts, user)
			}
		}
	}
	return wake, conflicts
}

// settle deletes an idle claim and returns its waiters; a claim that no
// longer makes anyone wait (nothing in flight, no probe: Claim now answers
// Held or Probe) hands its waiters back too.
func (r *Registry[W]) settle(userID string, c *claim[W]) []W {
	c.promoteExtra()
	if c.idle() {
		delete(r.claims, userID)
		return c.waiters
	}
	if c.inFlight > 0 || c.probing {
		return nil
	}
	w := c.waiters
	c.waiters = nil
	return w
}

// Holder is what HolderOf finds: a user's known live purchase, or lottery
// entry that may still win.
type Holder struct {
	UserID, SKU    string
	ReservationID  string // a live purchase
	EntryRequestID string // a lottery entry
}

// HolderOf returns the user's known hold, if any.
func (r *Registry[W]) HolderOf(userID string) (Holder, bool) {
	c := r.claims[userID]
	if c != nil && c.held == "" && len(c.extra) > 0 {
		h := c.extra[0]
		c = &claim[W]{sku: h.sku, held: h.id, entry: h.entry}
	}
	if c == nil || c.held == "" {
		return Holder{}, false
	}
	if c.entry {
		return Holder{UserID: userID, SKU: c.sku, EntryRequestID: c.held}, true
	}
	return Holder{UserID: userID, SKU: c.sku, ReservationID: c.held}, true
}
