package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/recovery"
)

// step runs one step and then the checks every step ends with.
func (r *run) step(s step) error {
	r.now += s.dt
	r.rng = rand.New(rand.NewPCG(r.seed, s.x))
	if err := r.act(s); err != nil {
		return err
	}
	if r.sh.Failed() != nil {
		return nil // the Machine may hold decisions the log lost: the next recovery is checked
	}
	return checkMachine(r.model, r.sh.Core().Machine())
}

func (r *run) act(s step) error {
	switch s.kind {
	case stepCalls:
		if err := r.calls(s); err != nil { // batch.go
			return err
		}
		if err := r.advance(); err != nil {
			return err
		}
		if s.flush {
			return r.flush()
		}
	case stepTick:
		return r.tick()
	case stepFlush:
		return r.flush()
	case stepCrash:
		if log := r.sh.Log(); log != nil && log.LastIndex() > log.DurableIndex() && r.rng.IntN(2) == 0 {
			// Power fails during the fsync: the batch was written to the
			// page cache and nothing was acknowledged.
			r.storeFaults.crashInSync = true
			r.faults["crash_in_fsync"]++
			if err := r.flush(); err != nil {
				return err
			}
		}
		return r.crash()
	case stepSnapshot:
		if r.exec.holds(shell.JobSnapshot) {
			return r.finishSnapshots()
		}
		r.sh.RequestSnapshot(r.t(), snapshotCaller{r})
		if err := r.afterInput(); err != nil {
			return err
		}
		if r.rng.IntN(2) == 0 {
			return r.finishSnapshots()
		}
	case stepFault:
		switch r.rng.IntN(5) {
		case 0:
			// Now and then a batch or two are written first: with small
			// batches (logBatchRecords) one input then commits a batch
			// and fails the next, queued one.
			r.storeFaults.failWrite = true
			r.storeFaults.writesOK = r.rng.IntN(3)
			r.storeFaults.writeKeep = r.rng.IntN(1001)
			r.faults["write_error"]++
		case 1:
			r.storeFaults.failSync = true
			r.faults["fsync_error"]++
		case 2:
			r.storeFaults.syncDelay = int64(1 + r.rng.IntN(5000))
			r.faults["slow_fsync"]++
		case 3:
			r.snaps.failWrite = true // the next snapshot's write fails
		default:
			r.slots.taken = 1 + r.rng.IntN(3) // other SKUs hold every truncation slot
			r.faults["truncation_slots_taken"]++
		}
	case stepClockJump:
		if r.rng.IntN(2) == 0 {
			r.now += r.def.PaymentWindowMs + int64(r.rng.IntN(60_000))
			r.faults["clock_forward"]++
		} else {
			r.now -= 1 + int64(r.rng.IntN(30_000))
			r.faults["clock_backward"]++
		}
	case stepRestore:
		return r.restore()
	case stepAudit:
		return r.audit() // audit.go
	}
	return nil
}

// tick runs the engine's timer: first, now and then, the jobs the shell
// handed over that are due (a ranking, a draw's or the expiry's timer);
// then the tick (expiry, the draw's next round, a due snapshot, a due
// recovery), and a snapshot written now and then. A SKU whose fsync failed
// waits for a restart: the tick restarts it.
func (r *run) tick() error {
	if r.sh.Failed() != nil {
		if _, armed := r.sh.Core().RetryAt(); !armed && !r.sh.RecoveryWaits() {
			r.faults["restart"]++
			return r.crash()
		}
	}
	if err := r.runJobs(2, 3, shell.JobRank, shell.JobDraw, shell.JobExpiry, shell.JobRecount, shell.JobAuditDue); err != nil {
		return err
	}
	failed := r.sh.Failed() != nil
	r.model.effects, r.round = 0, 0
	r.sh.Tick(r.t())
	if !failed {
		r.modelTick()
		if r.round != r.model.effects {
			return fmt.Errorf("tick wrote %d records, the model %d", r.round, r.model.effects)
		}
	}
	recovered := r.recovery != nil
	if err := r.afterInput(); err != nil {
		return err
	}
	if !recovered { // a recovery at the round's end asks for a ranking at the next round
		if err := r.checkDrawRanked(); err != nil {
			return err
		}
	}
	if r.sh.Log() == nil || r.sh.Failed() != nil {
		return nil
	}
	if err := r.flush(); err != nil {
		return err
	}
	return r.runJobs(1, 3, shell.JobSnapshot)
}

// modelTick is a tick on the model: expiry, the lottery's timers, and the
// next round of a draw whose ranking the core knows.
func (r *run) modelTick() {
	r.model.tick(r.now)
	if r.rankKnown {
		r.rankKnown = !r.model.recordDraw(r.now, r.drawBatch())
	}
}

// snapshotCaller is an operator waiting for a snapshot.
type snapshotCaller struct{ r *run }

func (c snapshotCaller) SnapshotDone(info shell.SnapshotInfo, err error) {
	if err == nil {
		c.r.replies["snapshot written"]++
	} else {
		c.r.replies["snapshot refused"]++
	}
}

// restore rebuilds the state at an earlier record with the recovery plan
// (restore to a point in time, by index or by time) and compares it with
// the live state the history had at that record.
func (r *run) restore() error {
	log := r.sh.Log()
	if r.sh.Failed() != nil || log == nil || log.Err() != nil || log.DurableIndex() != log.LastIndex() {
		return nil
	}
	var points []uint64
	for index := range r.hashAt {
		if index > 0 && index <= log.DurableIndex() {
			points = append(points, index)
		}
	}
	if len(points) == 0 {
		return nil
	}
	slices.Sort(points)
	point := points[r.rng.IntN(len(points))]
	o := recovery.Options{CampaignID: campaignID, SKUID: r.skuID, UntilIndex: point}
	kind := "restore"
	if next, ok := r.recordAt[point+1]; ok && next > r.recordAt[point] && r.rng.IntN(2) == 0 {
		// By time: the records decided at or before the point's time, and
		// the next one decided later.
		o.UntilIndex, o.UntilTime, kind = 0, r.recordAt[point], "restore_by_time"
	}
	res, err := recovery.Plan(log, r.snaps, o)
	if err != nil {
		if errors.Is(err, recovery.ErrNoBase) {
			return nil // the log before the point was truncated and no snapshot covers it
		}
		return fmt.Errorf("%s to record %d: %w", kind, point, err)
	}
	if res.Machine.Hash() != r.hashAt[point] {
		return fmt.Errorf("%s to record %d: the state differs from the live state at that record (replayed to %d)", kind, point, res.LastApplied)
	}
	r.faults[kind]++
	return nil
}

// call decides one call of a round, its arguments resolved against the
// current state.
func (r *run) call(spec callSpec) error {
	if r.lottery {
		if handled, err := r.lotteryCall(spec); handled {
			return err
		}
	}
	now := r.now
	m := r.model
	switch spec.kind {
	case callReserve, callReserveRepeat:
		request, user, holder := r.pickRequest(spec)
		c := &core.Call{Kind: core.KindReserve, RequestID: request, UserID: user, Holder: holder}
		return r.decide(c, func() modelReply { return m.reserve(now, request, user, holder) })
	case callPay:
		seq := r.pickSeq(spec.a)
		payment := fmt.Sprintf("p%d", seq)
		if spec.b%4 == 0 {
			payment = fmt.Sprintf("p%d-%d", seq, spec.b%3) // another payment for the same order
		}
		c := &core.Call{Kind: core.KindPay, Seq: seq, PaymentID: payment, Amount: 100}
		if r.tag(c, spec.b) {
			return r.decide(c, func() modelReply { return modelReply{outcome: sku.OutcomeNotFound} })
		}
		return r.decide(c, func() modelReply { return m.pay(now, seq, payment) })
	case callCancel, callCloseExpired:
		seq := r.pickSeq(spec.a)
		reason := sku.ReasonCancelled
		if spec.kind == callCloseExpired {
			reason = sku.ReasonExpired
		}
		c := &core.Call{Kind: core.KindClose, Seq: seq, Reason: reason}
		if r.tag(c, spec.b) {
			return r.decide(c, func() modelReply { return modelReply{outcome: sku.OutcomeNotFound} })
		}
		return r.decide(c, func() modelReply { return m.cancel(now, seq, reason == sku.ReasonExpired) })
	case callRelease:
		seq := r.pickSeq(spec.a)
		c := &core.Call{Kind: core.KindRelease, Seq: seq}
		return r.decide(c, func() modelReply { return m.release(now, seq) })
	case callPause, callResume:
		paused := spec.kind == callPause
		kind := core.KindResume
		if paused {
			kind = core.KindPause
		}
		c := &core.Call{Kind: kind}
		return r.decide(c, func() modelReply { return modelReply{outcome: m.setPaused(now, paused)} })
	case callRedefine:
		if r.model.celled() && spec.a%2 == 0 && r.cells == nil {
			return r.cellCall(spec) // cells_step.go
		}
		d := r.model.def
		switch spec.b % 8 {
		case 0:
			d.SaleLimit = max(1, d.SaleLimit-1) // not allowed (or no change)
		case 1, 2, 3:
			d.EndAt += int64(1000 + spec.a%60_000)
		case 7:
			d.MaxUnpaidPerSubject = spec.a % 3 // the cap may change either way
		default:
			d.SaleLimit += 1 + spec.a%3
		}
		d.IDKey = [16]byte{}
		c := &core.Call{Kind: core.KindDefine, Def: &d}
		return r.decide(c, func() modelReply { return modelReply{outcome: m.define(now, d)} })
	case callGet:
		seq := r.pickSeq(spec.a)
		c := &core.Call{Kind: core.KindGet, Seq: seq}
		return r.decide(c, func() modelReply {
			if m.get(seq) == nil {
				return modelReply{}
			}
			return modelReply{seq: seq}
		})
	case callLookup:
		request, _, _ := r.pickRequest(callSpec{kind: callReserveRepeat, a: spec.a})
		c := &core.Call{Kind: core.KindLookup, RequestID: request}
		return r.decide(c, func() modelReply { return m.lookup(request) })
	}
	return fmt.Errorf("unknown call kind %d", spec.kind)
}

// pickRequest returns a new request_id for a random user, or one already
// sent: by the same user (a retry of an in-flight or finished request) or,
// now and then, by another user (REQUEST_ID_REUSED). Most new ones carry
// an entry pass's holder (holderOf); a resend carries the first's.
func (r *run) pickRequest(spec callSpec) (request, user string, holder sku.Holder) {
	if spec.kind == callReserve || len(r.reqIDs) == 0 {
		request = fmt.Sprintf("q%d", len(r.reqIDs)+1)
		switch spec.a % 64 {
		case 1:
			request += " x" // not an id: INVALID, nothing recorded
		case 2:
			request += strings.Repeat("z", 64) // too long
		}
		user = fmt.Sprintf("u%d", spec.b%uint32(r.users))
		holder = holderOf(spec.a >> 6)
		r.reqIDs = append(r.reqIDs, request)
		r.requests = append(r.requests, modelRequest{user: user})
		r.holders = append(r.holders, holder)
		return request, user, holder
	}
	i := int(spec.a % uint32(len(r.reqIDs)))
	request, user, holder = r.reqIDs[i], r.requests[i].user, r.holders[i]
	if spec.b%6 == 0 {
		user = fmt.Sprintf("u%d", spec.b%uint32(r.users))
	}
	return request, user, holder
}

// holderOf draws an entry pass's holder from x: a third of reserves carry
// none; the others a device key of three, now and then also a network key
// of two (kinds are separate subjects), a tier, and risk >= 1 for a third.
// Few devices for 2-31 users, so the caps bind.
func holderOf(x uint32) sku.Holder {
	if x%3 == 0 {
		return sku.Holder{}
	}
	h := sku.Holder{Tier: uint8(x / 3 % 4), Subjects: 1}
	h.Keys[0] = sku.SubjectKey{'d', byte('0' + x/12%3)}
	if x/36%2 == 0 {
		h.Subjects |= 1 << 3
		h.Keys[3] = sku.SubjectKey{'n', byte('0' + x/72%2)}
	}
	if x/144%3 == 0 {
		h.Risk = uint8(1 + x/432%2)
	}
	return h
}

// pickSeq returns a reservation seq, now and then one that does not exist.
func (r *run) pickSeq(a uint32) uint32 {
	n := uint32(len(r.model.res))
	if n == 0 || a%8 == 0 {
		return n + 1
	}
	return 1 + a%n
}

// tag gives the call, now and then, the tag and cell of its reservation
// id: the right ones (the tag drawn from the SKU's key and the SKU's cell,
// as an id handed to a buyer carries them), a forged tag, or the right tag
// under another cell. It reports whether the id is forged: the call then
// names no reservation (NOT_FOUND) and changes nothing.
func (r *run) tag(c *core.Call, b uint32) (forged bool) {
	c.IDCell = r.model.def.Cell
	switch b % 16 {
	case 1:
		c.Tag = "0123456789abcdef"
		return !r.model.defined || c.Tag != r.rightTag(c.Seq)
	case 2:
		c.Tag = r.rightTag(c.Seq)
		return c.Tag == ""
	case 3:
		c.Tag, c.IDCell = r.rightTag(c.Seq), "c9" // no cell of the simulation
		return c.Tag != ""
	}
	return false
}

// rightTag returns the tag of reservation seq's id under the SKU's key.
func (r *run) rightTag(seq uint32) string {
	if r.sh.Failed() != nil || !r.sh.Core().Machine().Defined() {
		return ""
	}
	key := r.sh.Core().Machine().Definition().IDKey
	_, _, _, tag, err := sku.ParseReservationID(sku.FormatReservationID(campaignID, r.skuID, seq, key))
	if err != nil {
		return ""
	}
	return tag
}
