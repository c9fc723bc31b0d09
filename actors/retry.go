package actors

import "time"

// maxLogFailureRetry bounds the wait between recoveries of a SKU whose log
// failed.
const maxLogFailureRetry = 30 * time.Second

// retryRecovery asks a SKU whose log failed to recover from disk again.
type retryRecovery struct{}

// After a write or fsync error the SKU stops (fail-stop: its Machine may
// hold decisions that are not on disk) and answers UNAVAILABLE. It does
// not stay so until the process restarts: after Config.LogFailureRetry the
// actor drops its Machine and log and runs the recovery a restart would
// (newest usable snapshot + replay of the log), so what is on disk is again
// the whole truth. A transient cause (a full disk freed, a permission
// restored) heals without a restart. The wait doubles, up to
// maxLogFailureRetry, at each failure until the SKU is healthy again: a
// record appended after the recovery made durable. (Reopening a log on a
// full disk succeeds; only the next write fails, so a successful recovery
// alone does not reset the wait.)

// scheduleRetry arms the next recovery after a failure, once.
func (a *skuActor) scheduleRetry() {
	if a.cfg.LogFailureRetry < 0 || a.retryArmed {
		return
	}
	if a.retryWait == 0 {
		a.retryWait = a.cfg.LogFailureRetry
	} else {
		a.retryWait = min(2*a.retryWait, maxLogFailureRetry)
	}
	a.retryArmed = true
	e, pid := a.h.engine, a.h.pid
	time.AfterFunc(a.retryWait, func() {
		select {
		case <-e.stop: // the engine is closing: nothing to retry
		default:
			e.system.Root.Send(pid, retryRecovery{})
		}
	})
}

// retryRecovery rebuilds the SKU from disk if its log failed; if that
// fails too, it tries again later, waiting longer.
func (a *skuActor) retryRecovery() {
	// A supervisor restart (a panic) may have come between: the new actor
	// has no retry armed but may have failed its own recovery on the same
	// bad disk, so the failure, not the flag, decides.
	a.retryArmed = false
	if a.failed == nil {
		return
	}
	defer a.cfg.recoverySlot()() // RecoveriesMax at once (engine.go)
	a.cfg.Logger.Info("SKU recovering from disk after a log failure", "campaign", a.h.campaignID, "sku", a.h.skuID,
		"waited", a.retryWait)
	a.stopSnapshots()
	a.closeLog()
	a.h.log.Store(nil)
	a.filter = nil
	a.recover()
	if a.failed != nil {
		a.scheduleRetry()
		return
	}
	a.healthyAt = a.log.LastIndex() + 1
}

// noteHealthy ends the backoff once a record appended after the last
// recovery is durable. It is one comparison while the SKU is healthy.
func (a *skuActor) noteHealthy() {
	if a.retryWait > 0 && !a.retryArmed && a.failed == nil && a.log.DurableIndex() >= a.healthyAt {
		a.retryWait = 0
	}
}
