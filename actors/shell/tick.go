package shell

import "time"

// Tick runs the SKU's timers at now: one bounded expiry step (a JobExpiry
// asks for another at once while reservations are still due), a lottery's
// timers and next round, a due snapshot, a due recovery, and the audit
// callers waiting for a cool-down that is over.
func (s *Shell) Tick(now time.Time) {
	s.noteDurable()
	s.tick(now)
	s.auditDue(now)
}

func (s *Shell) tick(now time.Time) {
	s.core.Tick(now)
	act := s.commit(now)
	if !act.Ticked {
		return
	}
	s.cfg.Host.Ticked(act.Expired, act.NextExpiry)
	if act.MoreExpiry && !s.timers.expiry {
		s.timers.expiry = true
		s.cfg.Executor.After(0, s.job(JobExpiry, now))
	}
}
