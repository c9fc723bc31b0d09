package replica

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is the coordinator's in-memory twin: the leader and sync keys of
// every replica set, one revision counter, and leases that expire by the
// clock it is handed (the simulator's, or time.Now), checked at every
// operation and at Expire. Each replica gets its own view of it (Replica),
// with its own lease, renewed by KeepAlive: a replica that stops calling
// it (paused, crashed, cut off) loses the key TTL later, as with etcd.
// It is linearizable (one mutex).
type Memory struct {
	mu    sync.Mutex
	clock func() time.Time
	rev   int64
	sets  map[string]*memorySet
}

type memorySet struct {
	leader      string
	leaderRev   int64
	leaderLease *memoryLease
	sync        SyncState
	syncRev     int64
	members     map[string]memoryMember
}

// memoryMember is a member key, on the lease it was put with.
type memoryMember struct {
	Member
	lease *memoryLease
}

type memoryLease struct {
	expires time.Time
	lost    chan struct{}
	ended   bool
}

// NewMemory returns an empty coordinator on clock.
func NewMemory(clock func() time.Time) *Memory {
	return &Memory{clock: clock, sets: map[string]*memorySet{}}
}

// MemoryReplica is one replica's Coordinator on a Memory.
type MemoryReplica struct {
	m     *Memory
	set   string
	name  string
	ttl   time.Duration
	lease *memoryLease // the current lease (nil: none yet, or ended)
	held  map[int64]*memoryLease
}

// Replica returns the Coordinator of replica name in set, with leases of ttl.
func (m *Memory) Replica(set, name string, ttl time.Duration) *MemoryReplica {
	return &MemoryReplica{m: m, set: set, name: name, ttl: ttl, held: map[int64]*memoryLease{}}
}

// Expire ends every lease whose time passed by the clock, freeing the
// leader keys on them.
func (m *Memory) Expire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked()
}

func (m *Memory) expireLocked() {
	now := m.clock()
	for _, s := range m.sets {
		if l := s.leaderLease; l != nil && (l.ended || !now.Before(l.expires)) {
			m.endLocked(l)
			s.leader, s.leaderRev, s.leaderLease = "", 0, nil
			m.rev++
		}
		for name, mm := range s.members {
			if l := mm.lease; l.ended || !now.Before(l.expires) {
				m.endLocked(l)
				delete(s.members, name)
				m.rev++
			}
		}
	}
}

func (m *Memory) endLocked(l *memoryLease) {
	if !l.ended {
		l.ended = true
		close(l.lost)
	}
}

func (m *Memory) setLocked(name string) *memorySet {
	s := m.sets[name]
	if s == nil {
		s = &memorySet{}
		m.sets[name] = s
	}
	return s
}

func (r *MemoryReplica) Name() string { return r.name }

// KeepAlive renews the replica's lease, as etcd's keep-alive does; a
// lease that expired already stays ended.
func (r *MemoryReplica) KeepAlive() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	if r.lease != nil && !r.lease.ended {
		r.lease.expires = r.m.clock().Add(r.ttl)
	}
}

// EndLease ends the replica's lease at once (a revoke, or the process's
// death seen TTL later), freeing its leader key.
func (r *MemoryReplica) EndLease() {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if r.lease != nil {
		r.m.endLocked(r.lease)
	}
	r.m.expireLocked()
}

func (r *MemoryReplica) Read(ctx context.Context) (View, error) {
	if err := ctx.Err(); err != nil {
		return View{}, err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	s := r.m.setLocked(r.set)
	v := View{Leader: s.leader, LeaderRevision: s.leaderRev, SyncRevision: s.syncRev}
	v.Sync = s.sync
	v.Sync.Standbys = slices.Clone(s.sync.Standbys)
	return v, nil
}

func (r *MemoryReplica) Acquire(ctx context.Context, v View) (Holding, error) {
	if err := ctx.Err(); err != nil {
		return Holding{}, err
	}
	if !MayLead(v, r.name) {
		return Holding{}, ErrNotEligible
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	s := r.m.setLocked(r.set)
	if s.leaderRev != 0 || s.syncRev != v.SyncRevision {
		return Holding{}, ErrNotEligible
	}
	l := r.liveLeaseLocked()
	r.m.rev++
	next := promoted(v, r.name)
	s.leader, s.leaderRev, s.leaderLease = r.name, r.m.rev, l
	s.sync, s.syncRev = next, r.m.rev
	r.held[r.m.rev] = l
	return Holding{Name: r.name, Revision: r.m.rev, Epoch: next.Epoch}, nil
}

// holdsLocked reports whether h is the set's current tenure.
func (r *MemoryReplica) holdsLocked(h Holding) (*memorySet, bool) {
	r.m.expireLocked()
	s := r.m.setLocked(r.set)
	return s, s.leaderRev != 0 && s.leaderRev == h.Revision
}

func (r *MemoryReplica) SetSync(ctx context.Context, h Holding, standbys []string) (SyncState, error) {
	if err := ctx.Err(); err != nil {
		return SyncState{}, err
	}
	if err := checkSync(h.Name, standbys); err != nil {
		return SyncState{}, err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	s, ok := r.holdsLocked(h)
	if !ok {
		return SyncState{}, ErrNotLeader
	}
	r.m.rev++
	s.sync = SyncState{Primary: h.Name, Standbys: slices.Clone(standbys), Epoch: h.Epoch}
	s.syncRev = r.m.rev
	return s.sync, nil
}

func (r *MemoryReplica) Release(ctx context.Context, h Holding, next []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkSync(h.Name, next); err != nil {
		return err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	s, ok := r.holdsLocked(h)
	if !ok {
		return ErrNotLeader
	}
	r.m.rev++
	s.leader, s.leaderRev, s.leaderLease = "", 0, nil
	if len(next) > 0 {
		s.sync, s.syncRev = released(h, next), r.m.rev
	}
	return nil
}

func (r *MemoryReplica) Lost(h Holding) <-chan struct{} {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	if l := r.held[h.Revision]; l != nil {
		return l.lost
	}
	done := make(chan struct{})
	close(done)
	return done
}

// liveLeaseLocked returns the replica's lease, a new one if the last one
// ended (etcd's session, made again).
func (r *MemoryReplica) liveLeaseLocked() *memoryLease {
	if r.lease == nil || r.lease.ended {
		r.lease = &memoryLease{expires: r.m.clock().Add(r.ttl), lost: make(chan struct{})}
	}
	return r.lease
}

func (r *MemoryReplica) Register(ctx context.Context, m Member) (<-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	s := r.m.setLocked(r.set)
	if s.members == nil {
		s.members = map[string]memoryMember{}
	}
	l := r.liveLeaseLocked()
	if held, ok := s.members[r.name]; ok && held.lease != l && !held.lease.ended {
		return nil, fmt.Errorf("%w: %s of replica set %s is registered at %s", ErrNameTaken, r.name, r.set, held.HTTP)
	}
	r.m.rev++
	s.members[r.name] = memoryMember{Member: m, lease: l}
	return l.lost, nil
}

func (r *MemoryReplica) Members(ctx context.Context) (map[string]Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.expireLocked()
	out := map[string]Member{}
	for name, mm := range r.m.setLocked(r.set).members {
		out[name] = mm.Member
	}
	return out, nil
}
