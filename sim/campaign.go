package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// Campaign mode: one campaign whose purchase_limit is
// "campaign", of 2 or 3 SKUs, each a whole simulated SKU engine (a run:
// its own disk, log, core and model), in one process with the engine's
// purchase registry (package actors/purchase, the real code). The
// simulator is the engine's shell around them, as package actors is: a
// reserve claims its user first and goes to its SKU only on Proceed; the
// registry learns each SKU's reservations and closes once durable, before
// the replies are released; a reply that never comes (a caller that gave
// up, a failed log) leaves its claim unknown until a look-up on that SKU
// answers; every recovery of a SKU resyncs the registry from its rebuilt
// state, and a crash (power lost: every SKU at once) rebuilds it from
// them all. Crashes come at any point, between a claim and its
// reservation included.
//
// In a third of the runs that are not celled the first SKU is a lottery:
// a reserve there is an entry (behind the claim, as the engine's Enter),
// a step now and then is the admin's draw, the ranking comes at a tick,
// and the lottery ends at end_at. An entry that may still win (ENTERED,
// WAITLISTED) holds its user like a live purchase.
//
// Checked after every step, against the SKUs' models (model.go, not the
// registry): no user holds live purchases or entries that may still win
// (decided, durable or not; of a failed SKU, appended) on two SKUs; a
// cross-SKU ALREADY_PURCHASED names a reservation of that user on that
// SKU, an ALREADY_ENTERED an entry of the user there. At the end, with
// every log durable: the registry knows every live purchase and live
// entry (none lost).

// campaignRun is one campaign-mode history in progress.
type campaignRun struct {
	seed  uint64
	rng   *rand.Rand
	skus  []*run
	users int
	reg   *purchase.Registry[int]
	// pending are the purchase events of records appended that the
	// registry has not learned, per SKU, in log order: a durable release
	// applies its batch's. Those of a round the log failed under stay,
	// durable or not, until the SKU's recovery resyncs the registry: a
	// batch committed meanwhile may hold some of them durably, but their
	// release failed.
	pending  [][]purchase.Event
	inFlight []claimedCall
	nextReq  int
	faults   map[string]int
	replies  map[string]int
}

// claimedCall is a reserve or look-up the registry let through, until its
// reply is released (or it gave up: abandoned).
type claimedCall struct {
	sku       int
	c         *core.Call
	attempt   *purchase.Attempt // Ran when its reply is released
	abandoned bool
}

// RunCampaign runs one campaign-mode history: deterministic, like Run.
func RunCampaign(o Options) Result {
	cr := &campaignRun{seed: o.Seed, rng: rand.New(rand.NewPCG(o.Seed, 0xca4a)), reg: purchase.New[int](),
		faults: map[string]int{}, replies: map[string]int{}}
	res := Result{Seed: o.Seed, Faults: cr.faults, Replies: cr.replies, Step: -1, Mode: ModeCampaign}
	n := 2 + cr.rng.IntN(2)
	cr.users = 2 + cr.rng.IntN(6)
	cr.pending = make([][]purchase.Event, n)
	for k := range n {
		r := newRun(o.Seed*8 + uint64(k))
		r.skuID = fmt.Sprintf("sku%d", k+1)
		r.faults, r.replies = cr.faults, cr.replies
		cr.hook(k, r)
		cr.skus = append(cr.skus, r)
	}
	for _, r := range cr.skus {
		if res.Err = r.protect(r.setUp); res.Err != nil {
			return res
		}
	}
	for i := 0; i < o.Steps; i++ {
		res.Steps++
		kind := weighted(cr.rng, 40, 10, 6, 12, 8, 4, 5, 4, 3)
		if o.Trace != nil {
			fmt.Fprintf(o.Trace, "step %d: %d\n", i, kind)
		}
		if res.Err = cr.skus[0].protect(func() error { return cr.step(kind) }); res.Err != nil {
			res.Step = i
			return res
		}
	}
	res.Step = o.Steps
	res.Err = cr.skus[0].protect(cr.final)
	return res
}

// hook connects SKU k's shell to the registry.
func (cr *campaignRun) hook(k int, r *run) {
	r.hooks = runHooks{
		purchaseLimit: sku.PurchaseLimitCampaign,
		celled:        cr.seed%4 == 3,
		lottery:       cr.seed%4 != 3 && cr.seed%3 == 0 && k == 0,
		records: func(m *sku.Machine, _ uint64, records []sku.Record) {
			cr.pending[k] = append(cr.pending[k], purchase.Events(m, records)...)
		},
		release: func(rel *shell.Release) {
			if !rel.Durable {
				return
			}
			for _, ev := range rel.Events { // releases come in log order: each is the first of its kind left
				if i := slices.Index(cr.pending[k], ev); i >= 0 {
					cr.pending[k] = slices.Delete(cr.pending[k], i, i+1)
				}
			}
			if _, conflicts := cr.reg.Apply(r.skuID, rel.Events); len(conflicts) > 0 {
				panic(fmt.Sprintf("registry: users %v reserved on %s while claimed elsewhere", conflicts, r.skuID))
			}
		},
		recovered: func(m *sku.Machine) {
			cr.pending[k] = nil // what was not durable is gone; what was is in m
			if m.Defined() {
				if _, conflicts := cr.reg.Resync(r.skuID, m.LivePurchases(), m.LiveEntries()); len(conflicts) > 0 {
					panic(fmt.Sprintf("resync: users %v live on %s and claimed elsewhere", conflicts, r.skuID))
				}
			}
		},
	}
}

// step runs one step of a campaign history, then its checks.
func (cr *campaignRun) step(kind int) error {
	dt := int64(cr.rng.IntN(800))
	for _, r := range cr.skus {
		r.now += dt
		r.rng = rand.New(rand.NewPCG(r.seed, cr.rng.Uint64()))
	}
	var err error
	switch kind {
	case 0:
		err = cr.reserve()
	case 1:
		err = cr.closeOne()
	case 2:
		err = cr.payOne()
	case 3:
		err = cr.flushAll()
	case 4:
		for _, r := range cr.skus {
			if err = r.tick(); err != nil {
				break
			}
		}
	case 5:
		err = cr.crash()
	case 6:
		r := cr.skus[cr.rng.IntN(len(cr.skus))]
		err = r.act(step{kind: stepFault})
	case 7:
		jump := 1000 + int64(cr.rng.IntN(20_000))
		for _, r := range cr.skus {
			r.now += jump
		}
		cr.faults["clock_forward"]++
	case 8:
		err = cr.draw()
	}
	if err != nil {
		return err
	}
	cr.settle()
	return cr.check()
}

// reserve draws a user and a SKU and runs the reserve behind the claim.
func (cr *campaignRun) reserve() error {
	user := fmt.Sprintf("u%d", cr.rng.IntN(cr.users))
	k := cr.rng.IntN(len(cr.skus))
	r := cr.skus[k]
	cr.nextReq++
	request := fmt.Sprintf("q%d", cr.nextReq)
	if cr.rng.IntN(5) == 0 && cr.nextReq > 1 { // a retry of an earlier request_id of this user
		request = fmt.Sprintf("q%d", 1+cr.rng.IntN(cr.nextReq-1))
	}
	a := purchase.NewAttempt(purchase.Direct[int]{Registry: cr.reg, Waiter: cr.nextReq}, user, r.skuID, request)
	step, d := a.Next()
	cr.replies["claim "+d.Verdict.String()]++
	for probes := 1; step == purchase.Lookup; probes++ {
		if probes > 2 { // a look-up that answers settles every lost answer it was given
			return fmt.Errorf("%s asked for a probe %d times in a row", user, probes)
		}
		still, err := cr.probe(d)
		if err != nil {
			return err
		}
		if step, d = a.Probed(still); step != purchase.Unknown {
			cr.replies["claim "+d.Verdict.String()]++
		}
	}
	switch step {
	case purchase.Run:
		c := &core.Call{Kind: core.KindReserve, RequestID: request, UserID: user}
		now, m := r.now, r.model
		decide := func() modelReply { return m.reserve(now, request, user, sku.Holder{}) }
		if r.lottery { // an entry, behind the claim as a reserve
			c = &core.Call{Kind: core.KindEnter, RequestID: request, UserID: user}
			decide = func() modelReply {
				e := m.enter(now, request, user, sku.Holder{})
				return modelReply{outcome: e.outcome, seq: e.seq, duplicate: e.duplicate}
			}
		}
		if err := r.decide(c, decide); err != nil {
			return err
		}
		call := claimedCall{sku: k, c: c, attempt: &a}
		if cr.rng.IntN(6) == 0 { // the caller gives up: its answer is lost
			call.abandoned = true
			a.Ran(true)
			cr.faults["answer_lost"]++
		}
		cr.inFlight = append(cr.inFlight, call)
		if err := r.advance(); err != nil {
			return err
		}
		if cr.rng.IntN(2) == 0 {
			return r.flush()
		}
	case purchase.AnswerHeld:
		if d.EntryRequestID != "" {
			cr.replies["held by an entry"]++
		} else {
			cr.replies["held by a purchase"]++
		}
		return cr.checkHeld(user, d)
	case purchase.Block:
		a.Abandon() // a caller that waits asks again later: a later step
	}
	return nil
}

// probe looks up lost answers on their SKU, as the engine does, and
// returns those whose look-up was not answered.
func (cr *campaignRun) probe(d purchase.Decision) (still []string, err error) {
	k := cr.skuIndex(d.SKU)
	r := cr.skus[k]
	calls := make([]*core.Call, len(d.RequestIDs))
	for i, request := range d.RequestIDs {
		c := &core.Call{Kind: core.KindLookup, RequestID: request}
		m := r.model
		if err := r.decide(c, func() modelReply { return m.lookup(request) }); err != nil {
			return nil, err
		}
		calls[i] = c
	}
	if err := r.advance(); err != nil {
		return nil, err
	}
	if err := r.flush(); err != nil {
		return nil, err
	}
	for i, c := range calls {
		if _, waiting := r.restsOn[c]; waiting || c.Err != nil {
			still = append(still, d.RequestIDs[i])
		}
	}
	cr.faults["probe"]++
	if len(still) > 0 {
		cr.faults["probe_unanswered"]++
	}
	return still, nil
}

// checkHeld checks a cross-SKU ALREADY_PURCHASED against the model: the
// named SKU made that reservation for this user, and it is live or the
// registry has not learned its close (pending); and an ALREADY_ENTERED:
// the named SKU holds that entry of this user, and it may still win or
// the registry has not learned its end (its loss, or the reservation it
// won).
func (cr *campaignRun) checkHeld(user string, d purchase.Decision) error {
	r := cr.skus[cr.skuIndex(d.SKU)]
	if d.EntryRequestID != "" {
		l := r.model.lot
		if l == nil || l.byRequest[d.EntryRequestID] == 0 || l.entries[l.byRequest[d.EntryRequestID]-1].user != user {
			return fmt.Errorf("Held names entry %s, not an entry of %s on %s", d.EntryRequestID, user, d.SKU)
		}
		if st, _ := l.entryStatus(l.byRequest[d.EntryRequestID]); st == sku.EntryEntered || st == sku.EntryWaitlisted {
			return nil
		}
		for _, p := range cr.pending[cr.skuIndex(d.SKU)] {
			if p.UserID == user {
				return nil
			}
		}
		return fmt.Errorf("Held names entry %s of %s, whose end the registry learned", d.EntryRequestID, user)
	}
	_, skuID, seq, _, err := sku.ParseReservationID(d.ReservationID)
	if err != nil || skuID != d.SKU {
		return fmt.Errorf("Held %s: %v", d.ReservationID, err)
	}
	res := r.model.get(seq)
	if res == nil || res.user != user {
		return fmt.Errorf("Held names %s, not a reservation of %s on %s", d.ReservationID, user, d.SKU)
	}
	if res.state == mPending || res.state == mPaid {
		return nil
	}
	for _, p := range cr.pending[cr.skuIndex(d.SKU)] { // closed, but the registry has not learned it
		if p.Kind == purchase.EventClosed && p.ID == d.ReservationID {
			return nil
		}
	}
	return fmt.Errorf("Held names %s of %s, whose close the registry learned", d.ReservationID, user)
}

// draw is the admin's draw on the campaign's lottery SKU, if any, with
// the rules' round and random randomness; the ranking comes at a tick.
func (cr *campaignRun) draw() error {
	r := cr.skus[0]
	if !r.lottery {
		return nil
	}
	round := r.def.Lottery.Beacon.Round
	randomness := make([]byte, lottery.Size)
	for i := range randomness {
		randomness[i] = byte(cr.rng.Uint32())
	}
	c := &core.Call{Kind: core.KindDraw, Round: round, Randomness: randomness}
	now, m := r.now, r.model
	if err := r.decide(c, func() modelReply { return modelReply{outcome: m.draw(now, round, randomness, nil)} }); err != nil {
		return err
	}
	return r.advance()
}

// closeOne cancels (or closes as expired) a live reservation of the models.
func (cr *campaignRun) closeOne() error {
	k, seq, ok := cr.pickLive()
	if !ok {
		return nil
	}
	r := cr.skus[k]
	expired := cr.rng.IntN(4) == 0
	reason := sku.ReasonCancelled
	if expired {
		reason = sku.ReasonExpired
	}
	c := &core.Call{Kind: core.KindClose, Seq: seq, Reason: reason}
	now, m := r.now, r.model
	if err := r.decide(c, func() modelReply { return m.cancel(now, seq, expired) }); err != nil {
		return err
	}
	return r.advance()
}

// payOne pays a live reservation of the models.
func (cr *campaignRun) payOne() error {
	k, seq, ok := cr.pickLive()
	if !ok {
		return nil
	}
	r := cr.skus[k]
	c := &core.Call{Kind: core.KindPay, Seq: seq, PaymentID: fmt.Sprintf("p%d", seq), Amount: 100}
	now, m := r.now, r.model
	if err := r.decide(c, func() modelReply { return m.pay(now, seq, c.PaymentID) }); err != nil {
		return err
	}
	return r.advance()
}

// pickLive draws a live reservation of the SKUs' models, in a fixed order.
func (cr *campaignRun) pickLive() (k int, seq uint32, ok bool) {
	type live struct {
		k   int
		seq uint32
	}
	var all []live
	for k, r := range cr.skus {
		var seqs []uint32
		for _, s := range r.model.live {
			seqs = append(seqs, s)
		}
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		for _, s := range seqs {
			all = append(all, live{k, s})
		}
	}
	if len(all) == 0 {
		return 0, 0, false
	}
	l := all[cr.rng.IntN(len(all))]
	return l.k, l.seq, true
}

func (cr *campaignRun) flushAll() error {
	for _, r := range cr.skus {
		if err := r.flush(); err != nil {
			return err
		}
	}
	return nil
}

// crash is a power loss of the process: every SKU's, and the registry
// with it; the new process rebuilds the registry from the SKUs' states.
func (cr *campaignRun) crash() error {
	cr.reg = purchase.New[int]()
	cr.inFlight = nil
	for k := range cr.pending {
		cr.pending[k] = nil
	}
	cr.faults["campaign_crash"]++
	for _, r := range cr.skus {
		if err := r.crash(); err != nil {
			return err
		}
	}
	return nil
}

// settle ends the claims of the calls whose replies were released (or
// answered at once): a definite answer, or, after a failed log, an
// unknown one.
func (cr *campaignRun) settle() {
	var left []claimedCall
	for _, call := range cr.inFlight {
		r := cr.skus[call.sku]
		if _, waiting := r.restsOn[call.c]; waiting {
			left = append(left, call)
			continue
		}
		if call.abandoned {
			continue
		}
		call.attempt.Ran(call.c.Err != nil && !errors.Is(call.c.Err, core.ErrUnavailable))
	}
	cr.inFlight = left
}

func (cr *campaignRun) skuIndex(skuID string) int {
	for k, r := range cr.skus {
		if r.skuID == skuID {
			return k
		}
	}
	panic("sim: unknown SKU " + skuID)
}

// check is the campaign's invariant on the models: no user has live
// purchases or entries that may still win on two SKUs, decided or durable
// (of a failed SKU, appended: appendedModel).
func (cr *campaignRun) check() error {
	on := map[string]string{}
	for _, r := range cr.skus {
		if r.sh.Failed() == nil {
			if err := checkMachine(r.model, r.sh.Core().Machine()); err != nil {
				return fmt.Errorf("%s: %w", r.skuID, err)
			}
		}
		m := r.appendedModel()
		for user := range m.live {
			if other, ok := on[user]; ok {
				return fmt.Errorf("user %s holds live purchases on %s and %s", user, other, r.skuID)
			}
			on[user] = r.skuID
		}
		for user := range liveEntries(m) {
			if other, ok := on[user]; ok && other != r.skuID {
				return fmt.Errorf("user %s holds an entry that may still win on %s and a purchase or entry on %s", user, r.skuID, other)
			}
			on[user] = r.skuID
		}
	}
	return nil
}

// appendedModel is the SKU's model as of the records its core appended,
// durable or not. A healthy SKU's is the model; a failed SKU's may have
// decided more: a round whose append failed (the log failed under it, a
// batch committed meanwhile) answered the calls past the records appended
// UNAVAILABLE, so they hold no user, and their claims end.
func (r *run) appendedModel() *model {
	if r.sh.Failed() != nil {
		if m, ok := r.saved[r.sh.Core().LastIndex()]; ok {
			return m
		}
	}
	return r.model
}

// liveEntries lists a lottery model's entries that may still win (ENTERED,
// WAITLISTED), by user: request_id.
func liveEntries(m *model) map[string]string {
	out := map[string]string{}
	if m.lot == nil {
		return out
	}
	for i, e := range m.lot.entries {
		if st, _ := m.lot.entryStatus(uint32(i + 1)); st == sku.EntryEntered || st == sku.EntryWaitlisted {
			out[e.user] = e.request
		}
	}
	return out
}

// final makes every log durable and checks that the registry knows every
// live purchase: none lost.
func (cr *campaignRun) final() error {
	for _, r := range cr.skus {
		if err := r.final(); err != nil {
			return fmt.Errorf("%s: %w", r.skuID, err)
		}
	}
	cr.settle()
	for _, r := range cr.skus {
		if r.sh.Failed() != nil {
			return nil // its claims wait for the recovery
		}
	}
	if err := cr.check(); err != nil {
		return err
	}
	for _, r := range cr.skus {
		for user, seq := range r.model.live {
			v, _ := r.sh.Core().Machine().Get(seq)
			h, ok := cr.reg.HolderOf(user)
			if !ok || h.SKU != r.skuID || h.ReservationID != v.ReservationID {
				return fmt.Errorf("the registry does not hold %s's live purchase %s (it has %+v)", user, v.ReservationID, h)
			}
		}
		for user, request := range liveEntries(r.model) {
			h, ok := cr.reg.HolderOf(user)
			if !ok || h.SKU != r.skuID || h.EntryRequestID != request {
				return fmt.Errorf("the registry does not hold %s's entry %s (it has %+v)", user, request, h)
			}
		}
	}
	return nil
}
