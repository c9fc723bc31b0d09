package replica

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Primaries follows, for a client of replica sets (a router), which
// replica leads each set and where it serves: the leader and member keys
// of every set under a prefix, read once and then watched.
type Primaries struct {
	sets string // SetsKey(prefix)

	mu      sync.RWMutex
	leaders map[string]string            // by set: the leader key's name
	members map[string]map[string]Member // by set, by replica
	changed chan struct{}                // closed (and replaced) when the table changes

	loaded     chan struct{} // closed by the first read of every set's keys
	loadedOnce sync.Once
}

// NewPrimaries returns an empty table for the sets under prefix; Follow
// fills it.
func NewPrimaries(prefix string) *Primaries {
	return &Primaries{sets: SetsKey(prefix), leaders: map[string]string{}, members: map[string]map[string]Member{},
		changed: make(chan struct{}), loaded: make(chan struct{})}
}

// Loaded returns a channel closed once Follow has read every set's keys:
// until then the table knows no set, and a client would send a replica
// set's requests where it sends a cell that is no replica set.
func (p *Primaries) Loaded() <-chan struct{} { return p.loaded }

// Primary returns set's primary and its member key ("" and a zero
// Member while the set has no leader, or its leader no member key).
func (p *Primaries) Primary(set string) (string, Member) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	name := p.leaders[set]
	return name, p.members[set][name]
}

// Known reports whether set has a leader or a registered member: a set
// that is between primaries (a failover) is known with no primary.
func (p *Primaries) Known(set string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaders[set] != "" || len(p.members[set]) > 0
}

// Changed returns a channel closed at the table's next change: a caller
// that found a set without a reachable primary waits on it for the next
// one (taken before it looks, so that no change falls between).
func (p *Primaries) Changed() <-chan struct{} {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.changed
}

// changedLocked wakes the waiters of Changed.
func (p *Primaries) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Follow reads every set's keys and then applies their changes as etcd
// reports them, until ctx ends; after a broken watch it reads again
// (waiting a second between failures).
func (p *Primaries) Follow(ctx context.Context, c *clientv3.Client, log *slog.Logger) {
	for ctx.Err() == nil {
		rev, err := p.load(ctx, c)
		if err == nil {
			err = p.watch(ctx, c, rev+1)
		}
		if ctx.Err() != nil {
			return
		}
		log.Debug("following the replica sets' keys in etcd: reading them again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (p *Primaries) load(ctx context.Context, c *clientv3.Client) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := c.Get(rctx, p.sets, clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaders, p.members = map[string]string{}, map[string]map[string]Member{}
	for _, kv := range resp.Kvs {
		p.applyLocked(kv, false)
	}
	p.changedLocked()
	p.loadedOnce.Do(func() { close(p.loaded) })
	return resp.Header.Revision, nil
}

func (p *Primaries) watch(ctx context.Context, c *clientv3.Client, from int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range c.Watch(wctx, p.sets, clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil {
			return err
		}
		p.mu.Lock()
		for _, ev := range resp.Events {
			p.applyLocked(ev.Kv, ev.Type == clientv3.EventTypeDelete)
		}
		p.changedLocked()
		p.mu.Unlock()
	}
	return ctx.Err()
}

// applyLocked applies one key of a set: <set>/leader or
// <set>/members/<name>; others (the sync key) are not needed here.
func (p *Primaries) applyLocked(kv *mvccpb.KeyValue, deleted bool) {
	set, rest, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), p.sets), "/")
	if !ok {
		return
	}
	switch {
	case rest == "leader":
		if deleted {
			delete(p.leaders, set)
		} else {
			p.leaders[set] = string(kv.Value)
		}
	case strings.HasPrefix(rest, "members/"):
		name := strings.TrimPrefix(rest, "members/")
		if deleted {
			delete(p.members[set], name)
			return
		}
		ms, err := decodeMembers("", []*mvccpb.KeyValue{{Key: []byte(name), Value: kv.Value}})
		if err != nil {
			return // a key the replicas never write; the set's other keys still serve
		}
		if p.members[set] == nil {
			p.members[set] = map[string]Member{}
		}
		p.members[set][name] = ms[name]
	}
}

// ReadSet returns set's view and members under prefix, for tools that
// are no replica (seckillctl ha status).
func ReadSet(ctx context.Context, c *clientv3.Client, prefix, set string) (View, map[string]Member, error) {
	e, err := NewEtcd(c, prefix, set, "reader", time.Second)
	if err != nil {
		return View{}, nil, err
	}
	v, err := e.Read(ctx)
	if err != nil {
		return View{}, nil, err
	}
	ms, err := e.Members(ctx)
	return v, ms, err
}
