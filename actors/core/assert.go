package core

import "fmt"

// assertRound checks, at the end of every round, the invariants of the
// Machine cheap enough to check every time: its counts balance
// (sku.Counts.Check, O(1)). Under Config.Verify (the simulator) it also
// runs the Machine's whole audit, O(reservations). A violation is a
// programming error (a decision broke the state): the core panics, naming
// both sides, rather than acknowledge decisions made on a corrupt state.
// A state rebuilt from disk that does not balance is an operating error
// instead: the shell's recovery refuses it.
func (c *Core) assertRound() {
	m := c.m
	if err := m.Counts().Check(m.Celled()); err != nil {
		panic(fmt.Sprintf("core: %s/%s after record %d: %v", m.Definition().CampaignID, m.Definition().SKUID, c.lastIndex, err))
	}
	if !c.cfg.Verify {
		return
	}
	if a := m.Audit(); !a.OK() {
		panic(fmt.Sprintf("core: %s/%s after record %d: audit: %v", m.Definition().CampaignID, m.Definition().SKUID, c.lastIndex, a.Violations))
	}
}
