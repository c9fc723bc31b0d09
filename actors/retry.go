package actors

import "time"

// maxLogFailureRetry bounds the wait between recoveries of a SKU whose log
// failed.
const maxLogFailureRetry = 30 * time.Second

// retryRecovery asks a SKU whose log failed to recover from disk again.
type retryRecovery struct{}

// After a write or fsync error the SKU stops (fail-stop: its Machine may
// hold decisions that are not on disk) and answers UNAVAILABLE. It does
// not stay so until the process restarts: after Config.LogFailureRetry,
// doubling up to maxLogFailureRetry while it fails again, the actor drops
// its Machine and log and runs the recovery a restart would (newest usable
// snapshot + replay of the log), so what is on disk is again the whole
// truth. A transient cause (a full disk freed, a permission restored)
// heals without a restart; a lasting one keeps failing, logged each time.

// scheduleRetry arms the next recovery, once per failure.
func (a *skuActor) scheduleRetry() {
	if a.cfg.LogFailureRetry < 0 || a.retryWait > 0 {
		return
	}
	a.retryWait = a.cfg.LogFailureRetry
	a.sendRetry()
}

func (a *skuActor) sendRetry() {
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
// fails too, it tries again later, waiting twice as long.
func (a *skuActor) retryRecovery() {
	if a.failed == nil || a.retryWait == 0 {
		return // a restart (supervisor) came first
	}
	defer a.cfg.recoverySlot()() // RecoveriesMax at once (engine.go)
	a.cfg.Logger.Info("SKU recovering from disk after a log failure", "campaign", a.h.campaignID, "sku", a.h.skuID)
	a.stopSnapshots()
	a.closeLog()
	a.h.log.Store(nil)
	a.filter = nil
	a.recover()
	if a.failed == nil {
		a.retryWait = 0
		return
	}
	a.retryWait = min(2*a.retryWait, maxLogFailureRetry)
	a.sendRetry()
}
