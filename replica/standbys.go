package replica

import "slices"

// Standbys is a primary's bookkeeping of rule 1 for its tenure: the
// standbys it waits for before it acknowledges a record (waited), and
// the sync set the coordinator holds (published), which is always a
// subset of waited. It is pure: the primary's loop asks it what to
// publish, publishes with Coordinator.SetSync, and reports the result.
//
//   - Add: a standby that holds every committed record is waited for at
//     once, and published after (Published).
//   - Drop: a standby that stopped answering is unpublished first; it is
//     waited for until the coordinator took the smaller set (Published),
//     so no record is acknowledged without it while it may be promoted.
//   - Strict: the last published standby is never dropped; the primary
//     stops acknowledging instead. One that needs a base copy is
//     (DropForBase): the primary then waits for none and, strict,
//     acknowledges nothing until it is published again.
type Standbys struct {
	strict    bool
	waited    []string
	published []string
	// pending is the set handed out to publish and not yet reported.
	pending  []string
	inFlight bool
	// unsure are standbys the coordinator may hold beside published: a
	// publication that failed may have been taken (etcd committed it and
	// answered after the call's deadline). Each stays waited for until a
	// publication succeeds, which settles what the coordinator holds.
	unsure []string
}

// NewStandbys starts a tenure whose coordinator holds published (the
// sync set of the acquisition): each is waited for from the start.
func NewStandbys(published []string, strict bool) *Standbys {
	return &Standbys{strict: strict, waited: slices.Clone(published), published: slices.Clone(published)}
}

// Waited returns the standbys a record must reach before it commits.
func (s *Standbys) Waited() []string { return s.waited }

// Published returns the sync set the coordinator holds.
func (s *Standbys) Published() []string { return s.published }

// Add waits for standby from now on and returns the sync set to publish
// with it (ok false while another publication is in flight, or if it is
// published already).
func (s *Standbys) Add(standby string) (publish []string, ok bool) {
	if s.inFlight || slices.Contains(s.published, standby) {
		return nil, false
	}
	if !slices.Contains(s.waited, standby) {
		s.waited = append(s.waited, standby)
	}
	return s.propose(append(slices.Clone(s.published), standby)), true
}

// Drop returns the sync set to publish without standby (ok false while
// another publication is in flight, if it is not published, or in strict
// mode if it is the last one); it stays waited for until Done reports the
// publication.
func (s *Standbys) Drop(standby string) (publish []string, ok bool) {
	return s.drop(standby, s.strict)
}

// DropForBase is Drop for a standby that needs a base copy, in strict
// mode too: it cannot catch up while it is waited for (the stream holds
// its base copy), and a strict primary that waits for no standby commits
// nothing (Commit), so nothing is acknowledged without a standby either
// way; once the base copy caught up, Add publishes it again.
func (s *Standbys) DropForBase(standby string) (publish []string, ok bool) {
	return s.drop(standby, false)
}

func (s *Standbys) drop(standby string, keepLast bool) (publish []string, ok bool) {
	if s.inFlight || !slices.Contains(s.published, standby) {
		return nil, false
	}
	if keepLast && len(s.published) == 1 {
		return nil, false
	}
	return s.propose(slices.DeleteFunc(slices.Clone(s.published), func(x string) bool { return x == standby })), true
}

// Forget stops waiting for a standby that is not published (one that was
// added but never published, or whose drop was published); false when it
// may be (published, in flight, or unsure: Settle first).
func (s *Standbys) Forget(standby string) bool {
	if slices.Contains(s.published, standby) || (s.inFlight && slices.Contains(s.pending, standby)) || slices.Contains(s.unsure, standby) {
		return false
	}
	s.waited = slices.DeleteFunc(s.waited, func(x string) bool { return x == standby })
	return true
}

// Settle returns the sync set to publish again when a failed publication
// may have been taken (unsure), so that the coordinator holds a known set
// (ok false while another publication is in flight, or when sure).
func (s *Standbys) Settle() (publish []string, ok bool) {
	if s.inFlight || len(s.unsure) == 0 {
		return nil, false
	}
	return s.propose(slices.Clone(s.published)), true
}

func (s *Standbys) propose(set []string) []string {
	s.pending, s.inFlight = set, true
	return slices.Clone(set)
}

// Done reports the publication handed out last: ok when the coordinator
// holds it now. A dropped standby is no longer waited for from here on;
// after a failure the publication may still have been taken, so each
// standby it added stays waited for until a later one succeeds (unsure;
// the caller retries or, if it lost the leader key, stops acknowledging
// altogether).
func (s *Standbys) Done(ok bool) {
	if !s.inFlight {
		panic("replica: Standbys.Done without a publication in flight")
	}
	s.inFlight = false
	if !ok {
		for _, x := range s.pending {
			if !slices.Contains(s.published, x) && !slices.Contains(s.unsure, x) {
				s.unsure = append(s.unsure, x)
			}
		}
		s.pending = nil
		return
	}
	for _, x := range append(slices.Clone(s.published), s.unsure...) {
		if !slices.Contains(s.pending, x) {
			s.waited = slices.DeleteFunc(s.waited, func(y string) bool { return y == x })
		}
	}
	s.published, s.pending, s.unsure = s.pending, nil, nil
	s.check()
}

// Commit returns how far records may commit given the index each standby
// acknowledged (acked) and the local durable index: the least of them over
// the waited standbys. ok is false in strict mode with no standby waited:
// nothing more may be acknowledged.
func (s *Standbys) Commit(durable uint64, acked func(standby string) uint64) (index uint64, ok bool) {
	if mutantHAAckBeforeStandby {
		return durable, true
	}
	if len(s.waited) == 0 {
		return durable, !s.strict
	}
	index = durable
	for _, x := range s.waited {
		index = min(index, acked(x))
	}
	return index, true
}

// check asserts rule 1: every published standby is waited for.
func (s *Standbys) check() {
	for _, x := range s.published {
		if !slices.Contains(s.waited, x) {
			panic("replica: standby " + x + " published but not waited for")
		}
	}
}
