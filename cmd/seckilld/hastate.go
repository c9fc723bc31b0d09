package main

import (
	"slices"
	"strings"

	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/replica"
)

// What a replica shows of itself: the state its HTTP handlers and metrics
// read (haState), replaced as a whole by the runner at each change.

type standbyStatus struct {
	Epoch     uint64      `json:"epoch"`
	Connected bool        `json:"connected"`
	Records   uint64      `json:"records"`
	LastError string      `json:"last_error,omitempty"`
	SKUs      []copiedSKU `json:"skus,omitempty"`
}

// copiedSKU is a standby's copy of one SKU log: its last record, the
// primary's commit index it heard, and the index its reads reach.
type copiedSKU struct {
	CampaignID  string `json:"campaign_id"`
	SKUID       string `json:"sku_id"`
	LastIndex   uint64 `json:"last_index"`
	CommitIndex uint64 `json:"commit_index"`
	Applied     uint64 `json:"applied"`
}

// haState is what the HTTP handlers and metrics show of the replica,
// replaced as a whole by the runner.
type haState struct {
	Set     string `json:"replica_set"`
	Name    string `json:"replica"`
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary,omitempty"`
	Address string `json:"address,omitempty"`
	// Sync and Waited are the primary's (empty: none); a replica in
	// another role shows neither, as it decides neither.
	Sync        []string        `json:"sync,omitzero"`
	Waited      []string        `json:"waited,omitzero"`
	Standbys    []standbyReport `json:"standbys,omitempty"`
	Copy        *standbyStatus  `json:"copy,omitempty"`
	Switchover  string          `json:"switchover,omitempty"`
	serving     bool            // the API is served (primary, engine open)
	primaryHTTP string          // Address, for NOT_PRIMARY
	// reads answers status reads of committed records while standby.
	reads httpapi.StandbyReader
}

type standbyReport struct {
	Name       string `json:"name"`
	Connected  bool   `json:"connected"`
	CaughtUp   bool   `json:"caught_up"`
	LagRecords uint64 `json:"lag_records"`
	LagMillis  int64  `json:"lag_ms"`
	// LastAck is in the one time format of every answer (timefmt), and
	// absent until the standby acknowledged a record to this primary: the
	// zero time.Time would read as year 1.
	LastAck string `json:"last_ack,omitempty"`
}

// newStandbyReport is how /admin/replica shows a standby of the primary.
func newStandbyReport(f follower) standbyReport {
	r := standbyReport{Name: f.Name, Connected: f.Connected, CaughtUp: f.CaughtUp, LagRecords: f.LagRecords, LagMillis: f.LagMillis}
	if !f.LastAck.IsZero() {
		r.LastAck = timefmt.Millis(f.LastAck.UnixMilli())
	}
	return r
}

// publishState replaces the state the handlers show.
func (n *haNode) publishState() {
	prev := n.state.Load()
	s := &haState{Set: prev.Set, Name: prev.Name, Role: n.node.Role().String(), Epoch: n.epoch}
	if note := n.switchNote.Load(); note != nil {
		s.Switchover = *note
	}
	switch {
	case n.primary != nil:
		s.Role, s.Primary, s.Address, s.serving = replica.Primary.String(), s.Name, n.member.HTTP, true
		s.Sync, s.Waited = append([]string{}, n.node.SyncSet()...), append([]string{}, n.node.Waited()...)
		for _, f := range n.primary.stream.Followers() {
			s.Standbys = append(s.Standbys, newStandbyReport(f))
		}
		slices.SortFunc(s.Standbys, func(a, b standbyReport) int { return strings.Compare(a.Name, b.Name) })
	case n.node.Role() == replica.Primary:
		s.Role = replica.Candidate.String() // promoting: not serving yet
	case n.standby != nil && n.standby.following != "":
		s.Primary = n.standby.following
		s.Address = n.addrs[s.Primary].HTTP
		if n.standby.stream != nil {
			st := n.standby.stream.Status()
			s.Copy = &st
			s.reads = n.standby.stream.Reads()
		}
	}
	s.primaryHTTP = s.Address
	n.state.Store(s)
}
