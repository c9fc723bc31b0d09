package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/wal"
)

// backoff is the model of when a failed SKU recovers from disk by itself,
// written from the rule (docs/internals.md, docs/operating.md): after a
// failed write or a failed recovery, a recovery is due LogFailureRetry
// later, the wait doubling at each further failure, up to
// core.MaxLogFailureRetry, until a record appended after a recovery is
// durable; after a failed fsync, none before a restart. A process start
// begins healthy.
type backoff struct {
	wait time.Duration // the wait of the last failure; 0: healthy
	// healthyAt is the first record appended after the last recovery:
	// once it is durable the SKU is healthy again (0: no recovery since
	// the last time it was).
	healthyAt uint64
	failed    bool  // the SKU was failed after the last input
	never     bool  // an fsync failed: no recovery before a restart
	at        int64 // ms, when the recovery of the last failure is due
	// latest is the latest time an input saw since the failure, ms: a
	// recovery made due then may wait for a snapshot being written, and
	// run after the clock went back.
	latest int64
}

// checkBackoff follows the SKU through one input (rec: the recovery the
// input made, if any) and checks the recovery the core arms at each new
// failure, and that none runs before it is due.
func (r *run) checkBackoff(rec *shell.Recovery) error {
	b := &r.backoff
	if b.failed {
		b.latest = max(b.latest, r.now)
	}
	if rec != nil && !r.starting {
		if !b.failed {
			return errors.New("backoff: a recovery of a SKU that had not failed")
		}
		if b.latest < b.at {
			return fmt.Errorf("backoff: recovered at %d ms (the clock at most %d ms since the failure), due at %d ms", r.now, b.latest, b.at)
		}
		if rec.Err == nil {
			b.failed, b.healthyAt = false, r.sh.Log().LastIndex()+1
			return nil
		}
		return r.backoffFailure()
	}
	// The log is durable past a record appended since the last recovery:
	// the SKU is healthy (a failing flush makes nothing durable, so this
	// is what was durable before a failure this input found).
	if log := r.sh.Log(); b.healthyAt != 0 && log != nil && log.DurableIndex() >= b.healthyAt {
		b.wait, b.healthyAt = 0, 0
	}
	if r.sh.Failed() != nil && !b.failed {
		return r.backoffFailure()
	}
	return nil
}

// backoffFailure is a new failure now: the wait it arms, or none after a
// failed fsync.
func (r *run) backoffFailure() error {
	b := &r.backoff
	b.failed, b.latest = true, r.now
	at, armed := r.sh.Core().RetryAt()
	if errors.Is(r.sh.Failed(), wal.ErrSyncFailed) || b.never {
		b.never = true
		if armed {
			return fmt.Errorf("backoff: a recovery armed at %v after a failed fsync", at)
		}
		return nil
	}
	if b.wait == 0 {
		b.wait = r.coreConfig().LogFailureRetry
	} else {
		b.wait = min(2*b.wait, core.MaxLogFailureRetry)
	}
	b.at = r.t().Add(b.wait).UnixMilli()
	if !armed || at.UnixMilli() != b.at {
		return fmt.Errorf("backoff: failed at %d ms, recovery armed %v at %d ms; the model's is due %v later, at %d ms",
			r.now, armed, at.UnixMilli(), b.wait, b.at)
	}
	return nil
}
