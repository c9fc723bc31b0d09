package sku

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// model is the simplest thing that predicts every outcome: slices and maps,
// no token ids, no indexes.
type model struct {
	def     Definition
	now     int64
	paused  bool
	avail   int
	res     []modelRes // index seq-1
	reqs    map[string]modelReq
	live    map[string]int // user -> seq
	refunds int
	celled  bool // SOLD_OUT is not recorded (grants_rapid_test.go)
}

type modelRes struct {
	user     string
	device   string // the pass's device subject, "" without one
	highRisk bool
	state    State
	expireAt int64
	holds    bool
	payment  string
	refunds  map[string]bool
}

type modelReq struct {
	user    string
	outcome Outcome
}

func (md *model) expireDue() {
	for i := range md.res {
		r := &md.res[i]
		if r.state == StatePendingPayment && r.expireAt <= md.now {
			md.closeRes(i+1, ReasonExpired)
		}
	}
}

func (md *model) closeRes(seq int, _ CloseReason) {
	r := &md.res[seq-1]
	r.state = StateClosed
	delete(md.live, r.user)
	if md.def.ReleaseOnClose {
		r.holds = false
		md.avail++
	}
}

// unpaidOn counts the PENDING_PAYMENT reservations of a device.
func (md *model) unpaidOn(device string) int {
	n := 0
	for _, r := range md.res {
		if r.state == StatePendingPayment && r.device == device {
			n++
		}
	}
	return n
}

// overCap is the cap on unpaid reservations per subject.
func (md *model) overCap(device string) bool {
	return device != "" && md.def.MaxUnpaidPerSubject > 0 && md.unpaidOn(device) >= int(md.def.MaxUnpaidPerSubject)
}

func (md *model) reserve(req, user string) Outcome { return md.reserveWith(req, user, "", false) }

// reserveWith is reserve with an entry pass naming a device (or none) and a
// risk level.
func (md *model) reserveWith(req, user, device string, highRisk bool) Outcome {
	if q, ok := md.reqs[req]; ok {
		if q.user != user {
			return OutcomeRequestIDReused
		}
		return q.outcome
	}
	switch {
	case md.now < md.def.StartAt:
		return OutcomeNotStarted
	case md.now >= md.def.EndAt:
		return OutcomeEnded
	case md.paused:
		return OutcomePaused
	}
	if seq, ok := md.live[user]; ok {
		r := md.res[seq-1]
		if r.state == StatePendingPayment && r.expireAt <= md.now {
			md.closeRes(seq, ReasonExpired)
		} else {
			return OutcomeAlreadyPurchased // not recorded: it holds while the purchase is live
		}
	}
	if md.overCap(device) {
		md.expireDue() // an expired reservation frees its device
		if md.overCap(device) {
			return OutcomeSubjectLimit // not recorded
		}
	}
	if md.avail == 0 {
		md.expireDue()
	}
	if md.avail == 0 {
		if !md.celled {
			md.reqs[req] = modelReq{user, OutcomeSoldOut}
		}
		return OutcomeSoldOut
	}
	md.avail--
	window := md.def.PaymentWindowMs
	if highRisk && md.def.PaymentWindowHighRiskMs > 0 {
		window = md.def.PaymentWindowHighRiskMs
	}
	md.res = append(md.res, modelRes{user: user, device: device, highRisk: highRisk,
		state: StatePendingPayment, expireAt: md.now + window, holds: true})
	md.live[user] = len(md.res)
	md.reqs[req] = modelReq{user, OutcomeAccepted}
	return OutcomeAccepted
}

func (md *model) pay(seq int, payment string) Outcome {
	if seq < 1 || seq > len(md.res) {
		return OutcomeNotFound
	}
	r := &md.res[seq-1]
	switch r.state {
	case StatePaid:
		if r.payment == payment {
			return OutcomeAlreadyPaid
		}
		if r.refunds == nil {
			r.refunds = map[string]bool{}
		}
		if !r.refunds[payment] { // a second payment: recorded for refund
			r.refunds[payment] = true
			md.refunds++
		}
		return OutcomePaymentConflict
	case StatePendingPayment:
		if md.now < r.expireAt {
			r.state, r.payment = StatePaid, payment
			return OutcomePaid
		}
		md.closeRes(seq, ReasonExpired)
	}
	if r.refunds == nil {
		r.refunds = map[string]bool{}
	}
	if !r.refunds[payment] {
		r.refunds[payment] = true
		md.refunds++
	}
	return OutcomeRefundRequired
}

func (md *model) close(seq int, reason CloseReason) Outcome {
	if seq < 1 || seq > len(md.res) {
		return OutcomeNotFound
	}
	r := &md.res[seq-1]
	switch r.state {
	case StatePaid:
		return OutcomeNotClosable
	case StateClosed:
		return OutcomeAlreadyClosed
	}
	if reason == ReasonExpired && md.now < r.expireAt {
		return OutcomeNotExpired
	}
	md.closeRes(seq, reason)
	return OutcomeClosed
}

func (md *model) release(seq int) Outcome {
	if seq < 1 || seq > len(md.res) {
		return OutcomeNotFound
	}
	r := &md.res[seq-1]
	switch {
	case r.state == StatePaid:
		return OutcomeNotClosable
	case r.state == StatePendingPayment:
		return OutcomeNotClosed
	case !r.holds:
		return OutcomeAlreadyReleased
	}
	r.holds = false
	md.avail++
	return OutcomeReleased
}

// TestMachineAgainstModel drives the Machine with random command sequences
// (reserve, pay, close, release, expire, clock moves, duplicates, pause),
// compares every outcome with the model, audits after every step, and at the
// end replays the produced records from empty and compares the hashes.
func TestMachineAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		def := Definition{
			CampaignID: "c1", SKUID: "s1", StartAt: 1_000, EndAt: 1_000_000,
			PaymentWindowMs: rapid.Int64Range(1, 50).Draw(t, "window"),
			SaleLimit:       uint32(rapid.IntRange(1, 6).Draw(t, "limit")),
			ReleaseOnClose:  rapid.Bool().Draw(t, "release_on_close"),
			// Entry-pass fields: a cap per device, a shorter window for risk >= 1.
			MaxUnpaidPerSubject: uint32(rapid.IntRange(0, 2).Draw(t, "max_unpaid_per_subject")),
		}
		def.PaymentWindowHighRiskMs = rapid.Int64Range(0, def.PaymentWindowMs).Draw(t, "window_high_risk")
		m := New()
		md := &model{def: def, now: 990, avail: int(def.SaleLimit), reqs: map[string]modelReq{}, live: map[string]int{}}
		var log []Record
		if _, recs, err := m.Define(md.now, def, nil); err != nil {
			t.Fatal(err)
		} else {
			log = append(log, recs...)
		}
		users := rapid.SampledFrom([]string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"})
		reqs := rapid.SampledFrom([]string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12"})
		payments := rapid.SampledFrom([]string{"p1", "p2", "p3"})
		devices := rapid.SampledFrom([]string{"", "d1", "d2"})
		deviceKey := func(device string) SubjectKey { return SubjectKey{device[0], device[1]} }
		check := func(what string, got, want Outcome) {
			if got != want {
				t.Fatalf("%s: got %s, model says %s", what, got, want)
			}
		}
		seqs := func() uint32 { return uint32(rapid.IntRange(0, len(md.res)+1).Draw(t, "seq")) }
		actions := map[string]func(*rapid.T){
			"reserve": func(t *rapid.T) {
				req, user := reqs.Draw(t, "req"), users.Draw(t, "user")
				want := md.reserve(req, user)
				res, recs := m.Reserve(md.now, req, user, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("reserve(%s,%s)", req, user), res.Outcome, want)
			},
			"reserveWithPass": func(t *rapid.T) {
				req, user, device := reqs.Draw(t, "req"), users.Draw(t, "user"), devices.Draw(t, "device")
				highRisk := rapid.Bool().Draw(t, "high_risk")
				h := Holder{Tier: uint8(rapid.IntRange(0, 2).Draw(t, "tier"))}
				if highRisk {
					h.Risk = uint8(rapid.IntRange(1, 3).Draw(t, "risk"))
				}
				if device != "" {
					h.Subjects, h.Keys[0] = 1, deviceKey(device)
					// A second subject kind that never binds: kinds are kept apart.
					h.Subjects, h.Keys[3] = h.Subjects|8, deviceKey(device)
				}
				want := md.reserveWith(req, user, device, highRisk)
				res, recs := m.ReserveWith(md.now, req, user, h, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("reserve(%s,%s,device %q,high risk %v)", req, user, device, highRisk), res.Outcome, want)
			},
			"pay": func(t *rapid.T) {
				seq, p := seqs(), payments.Draw(t, "payment")
				want := md.pay(int(seq), p)
				res, recs := m.Pay(md.now, seq, p, 100, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("pay(%d,%s)", seq, p), res.Outcome, want)
			},
			"cancel": func(t *rapid.T) {
				seq := seqs()
				want := md.close(int(seq), ReasonCancelled)
				res, recs := m.Close(md.now, seq, ReasonCancelled, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("cancel(%d)", seq), res.Outcome, want)
			},
			"closeExpired": func(t *rapid.T) {
				seq := seqs()
				want := md.close(int(seq), ReasonExpired)
				res, recs := m.Close(md.now, seq, ReasonExpired, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("close-expired(%d)", seq), res.Outcome, want)
			},
			"release": func(t *rapid.T) {
				seq := seqs()
				want := md.release(int(seq))
				res, recs := m.Release(md.now, seq, nil)
				log = append(log, recs...)
				check(fmt.Sprintf("release(%d)", seq), res.Outcome, want)
			},
			"expire": func(t *rapid.T) {
				md.expireDue()
				log = m.Expire(md.now, 1000, log)
			},
			"pauseResume": func(t *rapid.T) {
				if rapid.Bool().Draw(t, "pause") {
					md.paused = true
					_, log = m.Pause(md.now, log)
				} else {
					md.paused = false
					_, log = m.Resume(md.now, log)
				}
			},
			"clock": func(t *rapid.T) {
				d := rapid.Int64Range(-3, 12).Draw(t, "dt")
				if rapid.IntRange(0, 20).Draw(t, "jump") == 0 {
					d = 2_000_000 // past end_at
				}
				md.now += d
				if md.now < m.LastAt() { // the machine never goes back in time
					md.now = m.LastAt()
				}
			},
			"toExpiry": func(t *rapid.T) {
				// Move the clock to just before, at or just after a recorded
				// expire_at: the boundary a late payment is judged by.
				if len(md.res) == 0 {
					return
				}
				r := md.res[rapid.IntRange(0, len(md.res)-1).Draw(t, "which")]
				if at := r.expireAt + rapid.Int64Range(-1, 1).Draw(t, "off"); at > md.now {
					md.now = at
				}
			},
		}
		names := []string{"reserve", "reserve", "reserveWithPass", "reserveWithPass", "pay", "pay", "cancel", "closeExpired", "release", "expire", "pauseResume", "clock", "clock", "clock", "toExpiry"}
		steps := rapid.IntRange(1, 300).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			func() {
				a := m.Audit()
				if !a.OK() {
					t.Fatalf("audit: %v", a.Violations)
				}
				if int(a.Counts.Available) != md.avail {
					t.Fatalf("available %d, model %d", a.Counts.Available, md.avail)
				}
				if int(a.Counts.RefundsRequired) != md.refunds {
					t.Fatalf("refunds %d, model %d", a.Counts.RefundsRequired, md.refunds)
				}
				for _, d := range []string{"d1", "d2"} {
					if got := m.UnpaidBySubject(0, deviceKey(d)); int(got) != md.unpaidOn(d) {
						t.Fatalf("unpaid on %s: %d, model %d", d, got, md.unpaidOn(d))
					}
				}
			}()
		}
		replayed := New()
		for i := range log {
			// Round-trip through the payload codec, as a replay from disk does.
			r, err := DecodeRecord(log[i].Type, log[i].AppendPayload(nil))
			if err != nil {
				t.Fatalf("decode record %d: %v", i, err)
			}
			if err := replayed.Apply(&r); err != nil {
				t.Fatalf("replay record %d (%s): %v", i, r.Type, err)
			}
		}
		if replayed.Hash() != m.Hash() {
			t.Fatalf("replay of %d records gives another state", len(log))
		}
		if a := replayed.Audit(); !a.OK() {
			t.Fatalf("audit after replay: %v", a.Violations)
		}
		var state bytes.Buffer
		if _, err := m.Freeze().Encode(&state); err != nil {
			t.Fatal(err)
		}
		restored, err := DecodeState(state.Bytes())
		if err != nil {
			t.Fatalf("decode state: %v", err)
		}
		if restored.Hash() != m.Hash() {
			t.Fatal("the state decodes to another state")
		}
		if a := restored.Audit(); !a.OK() {
			t.Fatalf("audit after decode: %v", a.Violations)
		}
	})
}
