package replica

import "context"

// Coordinator is the replica set's view in the coordinator (etcd), seen by
// one replica: the only way a replica takes the lead or changes who may
// take it next. Every method is one linearizable transaction or read.
type Coordinator interface {
	// Read returns the set's current view.
	Read(ctx context.Context) (View, error)
	// Acquire takes the leader key for this replica, on its lease, if
	// MayLead(v, name) and the leader and sync keys are still as v read
	// them; the sync key then names it primary of the next epoch (its sync
	// set is v's less itself). ErrNotEligible otherwise.
	Acquire(ctx context.Context, v View) (Holding, error)
	// SetSync publishes standbys as the sync set of h's epoch, if h still
	// holds the leader key (ErrNotLeader otherwise).
	SetSync(ctx context.Context, h Holding, standbys []string) (SyncState, error)
	// Release frees the leader key h holds, and names next as the only
	// replicas that may take it (a switchover: next is the standby that
	// holds every record); with next empty the sync key stays, so the
	// primary and its sync set may lead again (a stop of the whole set).
	// ErrNotLeader if h no longer holds it.
	Release(ctx context.Context, h Holding, next []string) error
	// Lost is closed once the holding it was asked for can no longer be
	// this replica's: its lease ended. A closed channel for a holding
	// that already ended.
	Lost(h Holding) <-chan struct{}
	// Register publishes m as this replica's member key, on its lease:
	// the key goes when the lease ends (the process died, or was cut off
	// from the coordinator for the TTL), and the returned channel is then
	// closed; the replica registers again. A member key of its name on
	// another lease (another process started with the same name, or this
	// one before a kill -9, whose lease ends within a TTL) is left as it
	// is: ErrNameTaken, naming the holder's HTTP address.
	Register(ctx context.Context, m Member) (<-chan struct{}, error)
	// Members returns the set's registered members by name.
	Members(ctx context.Context) (map[string]Member, error)
	// Name is this replica's name.
	Name() string
}

// Member is what a replica publishes of itself: where clients and its
// peers reach it.
type Member struct {
	// HTTP is the base URL of its HTTP API (http://host:port).
	HTTP string `json:"http"`
	// Replication is the host:port its replication stream listens on
	// (standbys of this replica, once primary, dial it).
	Replication string `json:"replication"`
}

// Holding is one replica's tenure of the leader key.
type Holding struct {
	Name string
	// Revision is the leader key's creation revision for this tenure: the
	// compare that guards every write of the primary.
	Revision int64
	// Epoch is the sync key's epoch written by the acquisition.
	Epoch uint64
}
