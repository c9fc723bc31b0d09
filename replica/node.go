package replica

import (
	"errors"
	"slices"
	"time"
)

// Role is what a replica is to its set at one moment.
type Role int

const (
	// Candidate: it neither leads nor follows a primary (it started, it
	// was demoted, or the leader key is free and it may not take it).
	Candidate Role = iota
	// Standby: it copies the primary's logs.
	Standby
	// Primary: it holds the leader key and serves; it acknowledges a
	// record once every waited standby holds it.
	Primary
)

func (r Role) String() string {
	switch r {
	case Standby:
		return "standby"
	case Primary:
		return "primary"
	}
	return "candidate"
}

// Follower is what a primary's replication stream says of one standby.
type Follower struct {
	Name      string
	Connected bool
	// CaughtUp: it holds every record committed so far, in every SKU.
	CaughtUp bool
	// LastAck is when it last acknowledged a record.
	LastAck time.Time
	// LagRecords is how many records it lacks over all SKUs.
	LagRecords uint64
	// NeedsBase: a SKU's copy needs a base copy (the records it needs
	// were truncated), which the stream holds while the standby is
	// waited for (stream.MayBaseCopy): it is dropped at once.
	NeedsBase bool
}

// ActionKind names what a runner does for a Node.
type ActionKind int

const (
	// ActRead: Coordinator.Read, reported with Node.Viewed.
	ActRead ActionKind = iota
	// ActAcquire: Coordinator.Acquire(View), reported with Node.Acquired.
	ActAcquire
	// ActPromote: become the primary of Holding (its epoch): stop copying,
	// begin the epoch in the logs, open the engine over a replication
	// stream that waits for Standbys, serve.
	ActPromote
	// ActDemote: stop acknowledging at once (close the engine and the
	// stream), answer writes NOT_PRIMARY.
	ActDemote
	// ActSetSync: Coordinator.SetSync(Holding, Standbys), reported with
	// Node.Published.
	ActSetSync
	// ActWait: the stream waits for exactly Standbys from now on.
	ActWait
	// ActFollow: copy from the primary named Primary (its member key gives
	// its replication address); Node.FollowFailed if it cannot yet.
	ActFollow
)

func (k ActionKind) String() string {
	return [...]string{"read", "acquire", "promote", "demote", "set-sync", "wait", "follow"}[k]
}

// Action is one step a runner performs, in the order given.
type Action struct {
	Kind     ActionKind
	View     View     // ActAcquire
	Holding  Holding  // ActPromote, ActSetSync
	Standbys []string // ActPromote, ActSetSync, ActWait
	Primary  string   // ActFollow
}

// Node is one replica's role loop, pure: Patroni's synchronous mode as a
// stepper. Its inputs are ticks (with the time and, on a primary, its
// standbys' statuses), the coordinator's answers and Lost; its outputs
// are Actions. It holds one coordinator call in flight at a time; the
// runner reports each before the next tick.
//
// As primary it keeps rule 1 through Standbys: a standby that caught up is
// waited for (ActWait) and then published (ActSetSync); one that is
// disconnected, or whose acknowledgements lag, longer than the bound is
// unpublished first (ActSetSync) and waited for no more only once the
// coordinator took that (ActWait); so is, at once, one that needs a base
// copy (Follower.NeedsBase). In strict mode the last published standby
// is never dropped, commits wait for it, unless it needs a base copy.
type Node struct {
	name   string
	strict bool
	bound  time.Duration

	role      Role
	following string
	// followRev is the leader key's revision of the tenure followed: a
	// primary that took the key again (a restart, a new replication
	// address) is followed anew.
	followRev int64
	holding   Holding
	standbys  *Standbys
	// down is, by waited standby, since when it has been disconnected.
	down map[string]time.Time
	// since is when the tenure began: a waited standby the stream has
	// not seen yet counts as disconnected from then.
	since time.Time
	// dropping is the standby whose drop is being published ("" for an
	// addition); inFlight while a coordinator call is out.
	dropping string
	inFlight bool
	// acquireView is the view an acquisition was asked in.
	acquireView View
	// now is the time of the last tick; holdOff, after a demotion, is
	// until when the replica leaves the free key to its sync set.
	now, holdOff time.Time
}

// NewNode returns the role loop of replica name: strict is
// --sync-strict, bound how long a published standby may be disconnected
// or lag without acknowledging before it is dropped from the sync set.
func NewNode(name string, strict bool, bound time.Duration) *Node {
	return &Node{name: name, strict: strict, bound: bound}
}

// Role returns the replica's role.
func (n *Node) Role() Role { return n.role }

// Following returns the primary a standby copies from.
func (n *Node) Following() string { return n.following }

// Holding returns the primary's tenure (zero unless primary).
func (n *Node) Holding() Holding { return n.holding }

// Waited returns the standbys a primary's commits wait for.
func (n *Node) Waited() []string {
	if n.standbys == nil {
		return nil
	}
	return slices.Clone(n.standbys.Waited())
}

// SyncSet returns the sync set as the primary last published it.
func (n *Node) SyncSet() []string {
	if n.standbys == nil {
		return nil
	}
	return slices.Clone(n.standbys.Published())
}

// Tick advances the loop at now; followers is the primary's stream's
// view of its standbys (ignored by others).
func (n *Node) Tick(now time.Time, followers []Follower) []Action {
	n.now = now
	if n.inFlight {
		return nil
	}
	if n.role == Primary {
		if a := n.tickPrimary(now, followers); len(a) > 0 {
			return a
		}
	}
	// A primary reads too: a leader key deleted by hand, or one whose
	// lease etcd ended before this replica's client noticed, demotes it
	// at once (Viewed).
	n.inFlight = true
	return []Action{{Kind: ActRead}}
}

func (n *Node) tickPrimary(now time.Time, followers []Follower) []Action {
	byName := map[string]Follower{}
	for _, f := range followers {
		byName[f.Name] = f
	}
	dead := func(name string) bool {
		f, ok := byName[name]
		if !ok || !f.Connected {
			if _, seen := n.down[name]; !seen {
				n.down[name] = maxTime(n.since, f.LastAck)
			}
			return now.Sub(n.down[name]) > n.bound
		}
		delete(n.down, name)
		return f.LagRecords > 0 && now.Sub(maxTime(n.since, f.LastAck)) > n.bound
	}
	// Drops first: a dead standby holds every commit back, and one that
	// needs a base copy gets none while it is waited for.
	for _, name := range n.standbys.Waited() {
		base := byName[name].NeedsBase
		if !dead(name) && !base {
			continue
		}
		if slices.Contains(n.standbys.Published(), name) {
			drop := n.standbys.Drop
			if base {
				drop = n.standbys.DropForBase
			}
			if publish, ok := drop(name); ok {
				n.dropping, n.inFlight = name, true
				if mutantHADropAfterAck {
					return []Action{{Kind: ActWait, Standbys: publish}, {Kind: ActSetSync, Holding: n.holding, Standbys: publish}}
				}
				return []Action{{Kind: ActSetSync, Holding: n.holding, Standbys: publish}}
			}
			continue // strict: the last one stays; commits wait for it
		}
		if !n.standbys.Forget(name) { // added but never published, unless unsure
			if publish, ok := n.standbys.Settle(); ok {
				// A publication answered with an error may have named
				// it: the set without it is published before it is no
				// longer waited for, as for a drop.
				n.dropping, n.inFlight = name, true
				return []Action{{Kind: ActSetSync, Holding: n.holding, Standbys: publish}}
			}
			continue
		}
		delete(n.down, name)
		return []Action{{Kind: ActWait, Standbys: n.Waited()}}
	}
	for _, f := range followers {
		if !f.Connected || !f.CaughtUp || f.Name == n.name || slices.Contains(n.standbys.Published(), f.Name) {
			continue
		}
		if publish, ok := n.standbys.Add(f.Name); ok {
			n.dropping, n.inFlight = "", true
			// Rule 1: waited for before it is published.
			return []Action{{Kind: ActWait, Standbys: n.Waited()}, {Kind: ActSetSync, Holding: n.holding, Standbys: publish}}
		}
	}
	return nil
}

// Viewed reports an ActRead: the view, or the error (retried next tick).
func (n *Node) Viewed(v View, err error) []Action {
	n.inFlight = false
	if err != nil {
		return nil
	}
	if n.role == Primary {
		if v.LeaderRevision != n.holding.Revision {
			return n.demote()
		}
		return nil
	}
	switch {
	case v.Leader != "" && v.Leader != n.name:
		if n.role == Standby && n.following == v.Leader && n.followRev == v.LeaderRevision {
			return nil
		}
		n.role, n.following, n.followRev = Standby, v.Leader, v.LeaderRevision
		return []Action{{Kind: ActFollow, Primary: v.Leader}}
	case v.Leader == n.name:
		// The key of this replica's former life (a restart within the
		// TTL): it is no tenure of this process; wait until it expires.
		return nil
	case MayLead(v, n.name) && (!n.now.Before(n.holdOff) || len(v.Sync.Standbys) == 0):
		// A demoted primary lost its lease for a reason (a pause, a cut
		// from etcd): for the bound it leaves the key to the standbys of
		// its sync set, who hold every acknowledged record too.
		n.inFlight, n.acquireView = true, v
		return []Action{{Kind: ActAcquire, View: v}}
	}
	return nil
}

// FollowFailed reports that an ActFollow could not start (the primary's
// member key is missing, its stream refused); the next view tries again.
func (n *Node) FollowFailed() {
	if n.role == Standby {
		n.role, n.following = Candidate, ""
	}
}

// Acquired reports an ActAcquire at now: the holding, or the error
// (ErrNotEligible: someone else was faster, or the view moved on).
func (n *Node) Acquired(now time.Time, h Holding, err error) []Action {
	n.inFlight = false
	if err != nil {
		return nil
	}
	n.role, n.following, n.holding = Primary, "", h
	// The sync set of the acquisition: each of them holds every record
	// acknowledged so far and may still be promoted, so it is waited for
	// until it catches up or is dropped (published first).
	n.standbys = NewStandbys(promoted(n.acquireView, n.name).Standbys, n.strict)
	n.down, n.since, n.dropping = map[string]time.Time{}, now, ""
	return []Action{{Kind: ActPromote, Holding: h, Standbys: n.Waited()}}
}

// Published reports an ActSetSync: nil when the coordinator took it.
// ErrNotLeader demotes at once, as Lost does.
func (n *Node) Published(err error) []Action {
	n.inFlight = false
	if n.role != Primary {
		return nil
	}
	n.standbys.Done(err == nil)
	dropped := n.dropping
	n.dropping = ""
	switch {
	case errors.Is(err, ErrNotLeader):
		return n.demote()
	case err != nil:
		return nil // retried from the next tick
	case dropped != "":
		delete(n.down, dropped)
		// Unpublished first; only now may commits go on without it.
		return []Action{{Kind: ActWait, Standbys: n.Waited()}}
	}
	return nil
}

// Lost reports that h's lease ended: a primary of h stops acknowledging
// at once and looks for the new primary.
func (n *Node) Lost(h Holding) []Action {
	if n.role != Primary || h.Revision != n.holding.Revision {
		return nil
	}
	return n.demote()
}

func (n *Node) demote() []Action {
	n.holdOff = n.now.Add(n.bound)
	n.role, n.holding, n.standbys, n.down, n.dropping = Candidate, Holding{}, nil, nil, ""
	n.inFlight = true
	return []Action{{Kind: ActDemote}, {Kind: ActRead}}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
