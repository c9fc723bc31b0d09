package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Etcd is the Coordinator on a real etcd. Its lease is a
// concurrency.Session, kept alive by the client in the background at a
// third of its TTL; a new one is made for an acquisition once the last
// one ended.
type Etcd struct {
	c         *clientv3.Client
	set, name string
	leaderKey string
	syncKey   string
	members   string // the members' key prefix, ending in "/"
	pending   string // the pending definitions' key prefix, ending in "/" (pending.go)
	seen      string // the replicas' records' key prefix, ending in "/" (seen.go)
	ttl       int    // seconds

	mu       sync.Mutex
	session  *concurrency.Session
	sessions map[int64]*concurrency.Session // by the holding's revision
}

// NewEtcd returns the Coordinator of replica name in replica set set,
// under prefix, with leases of ttl (whole seconds, at least 1; etcd's own
// election timeout is its floor in practice).
func NewEtcd(c *clientv3.Client, prefix, set, name string, ttl time.Duration) (*Etcd, error) {
	if !ValidName(set) || !ValidName(name) {
		return nil, fmt.Errorf("%w: replica set %q, replica %q", ErrInvalid, set, name)
	}
	secs := int((ttl + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	base := setKey(prefix, set)
	return &Etcd{c: c, set: set, name: name, leaderKey: base + "/leader", syncKey: base + "/sync", members: base + "/members/", pending: base + "/pending/", seen: base + "/seen/", ttl: secs,
		sessions: map[int64]*concurrency.Session{}}, nil
}

// setKey is the key under which replica set set lives.
func setKey(prefix, set string) string {
	return SetsKey(prefix) + set
}

// SetsKey is the prefix of every replica set's keys under prefix (a
// router watches it).
func SetsKey(prefix string) string {
	return strings.TrimSuffix(prefix, "/") + "/replicasets/"
}

func (e *Etcd) Name() string { return e.name }

// LeaderKey is the key a router watches to find the set's primary.
func (e *Etcd) LeaderKey() string { return e.leaderKey }

func (e *Etcd) Read(ctx context.Context) (View, error) { return e.read(ctx, true) }

// read is Read; release: an orphan leader key is deleted and the set read
// again, once.
func (e *Etcd) read(ctx context.Context, release bool) (View, error) {
	resp, err := e.c.Txn(ctx).Then(clientv3.OpGet(e.leaderKey), clientv3.OpGet(e.syncKey)).Commit()
	if err != nil {
		return View{}, err
	}
	var v View
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		if release && e.orphan(kvs[0]) {
			return e.releaseOrphan(ctx, kvs[0].CreateRevision)
		}
		v.Leader, v.LeaderRevision = string(kvs[0].Value), kvs[0].CreateRevision
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if v.Sync, err = decodeSync(kvs[0].Value); err != nil {
			return View{}, err
		}
		v.SyncRevision = kvs[0].ModRevision
	}
	return v, nil
}

// liveSession returns a session whose lease is alive, making one if the
// last one ended. The lease is granted within ctx (an unreachable etcd
// fails the call at ctx's deadline); its keep-alives then run until the
// session is closed or the lease ends, beyond ctx.
func (e *Etcd) liveSession(ctx context.Context) (*concurrency.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil {
		select {
		case <-e.session.Done():
			e.session = nil
		default:
			return e.session, nil
		}
	}
	lease, err := e.c.Grant(ctx, int64(e.ttl))
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(e.c, concurrency.WithLease(lease.ID), concurrency.WithTTL(e.ttl),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, err
	}
	e.session = s
	return s, nil
}

func (e *Etcd) Acquire(ctx context.Context, v View) (Holding, error) {
	if !MayLead(v, e.name) {
		return Holding{}, ErrNotEligible
	}
	s, err := e.liveSession(ctx)
	if err != nil {
		return Holding{}, err
	}
	next := promoted(v, e.name)
	resp, err := e.c.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(e.leaderKey), "=", 0),
		clientv3.Compare(clientv3.ModRevision(e.syncKey), "=", v.SyncRevision),
	).Then(
		clientv3.OpPut(e.leaderKey, e.name, clientv3.WithLease(s.Lease())),
		clientv3.OpPut(e.syncKey, next.encode()),
	).Commit()
	if err != nil {
		return Holding{}, err
	}
	if !resp.Succeeded {
		return Holding{}, ErrNotEligible
	}
	h := Holding{Name: e.name, Revision: resp.Header.Revision, Epoch: next.Epoch}
	e.mu.Lock()
	e.sessions[h.Revision] = s
	e.mu.Unlock()
	return h, nil
}

// orphan reports whether the leader key kv is on this replica's live
// lease without being a tenure Acquire returned: an acquisition etcd
// committed whose answer never came (the call timed out, the runner was
// told it failed). This process keeps that lease alive for its member
// key, so the key would never expire: this replica waits for the key of
// "a former life" to go, the others follow it, and the set has no primary
// until the process ends.
func (e *Etcd) orphan(kv *mvccpb.KeyValue) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == nil || kv.Lease != int64(e.session.Lease()) || e.sessions[kv.CreateRevision] != nil {
		return false
	}
	select {
	case <-e.session.Done():
		return false
	default:
		return true
	}
}

// releaseOrphan deletes an orphan leader key (of create revision rev) and
// reads the set again: its epoch was never begun nor served, and the next
// acquisition, this replica's or another's, takes a new one.
func (e *Etcd) releaseOrphan(ctx context.Context, rev int64) (View, error) {
	if _, err := e.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.leaderKey), "=", rev)).
		Then(clientv3.OpDelete(e.leaderKey)).Commit(); err != nil {
		return View{}, err
	}
	return e.read(ctx, false)
}

// held is the compare that guards every write of h's tenure.
func (e *Etcd) held(h Holding) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(e.leaderKey), "=", h.Revision)
}

func (e *Etcd) SetSync(ctx context.Context, h Holding, standbys []string) (SyncState, error) {
	if err := checkSync(h.Name, standbys); err != nil {
		return SyncState{}, err
	}
	st := SyncState{Primary: h.Name, Standbys: standbys, Epoch: h.Epoch}
	resp, err := e.c.Txn(ctx).If(e.held(h)).Then(clientv3.OpPut(e.syncKey, st.encode())).Commit()
	if err != nil {
		return SyncState{}, err
	}
	if !resp.Succeeded {
		return SyncState{}, ErrNotLeader
	}
	return st, nil
}

func (e *Etcd) Release(ctx context.Context, h Holding, next []string) error {
	if err := checkSync(h.Name, next); err != nil {
		return err
	}
	ops := []clientv3.Op{clientv3.OpDelete(e.leaderKey)}
	if len(next) > 0 {
		ops = append(ops, clientv3.OpPut(e.syncKey, released(h, next).encode()))
	}
	resp, err := e.c.Txn(ctx).If(e.held(h)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNotLeader
	}
	return nil
}

func (e *Etcd) Lost(h Holding) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.sessions[h.Revision]; s != nil {
		return s.Done()
	}
	done := make(chan struct{})
	close(done)
	return done
}

func (e *Etcd) Register(ctx context.Context, m Member) (<-chan struct{}, error) {
	s, err := e.liveSession(ctx)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	key := e.members + e.name
	put := clientv3.OpPut(key, string(b), clientv3.WithLease(s.Lease()))
	// One transaction: absent or on this lease, the key is put; on
	// another lease it is read, to name its holder.
	resp, err := e.c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(key), "=", s.Lease())).Then(put).
		Else(clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{put}, []clientv3.Op{clientv3.OpGet(key)})).Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		inner := resp.Responses[0].GetResponseTxn()
		if !inner.Succeeded {
			held := Member{}
			if kvs := inner.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				_ = json.Unmarshal(kvs[0].Value, &held)
			}
			return nil, fmt.Errorf("%w: %s of replica set %s is registered at %s", ErrNameTaken, e.name, e.set, held.HTTP)
		}
	}
	return s.Done(), nil
}

func (e *Etcd) Members(ctx context.Context) (map[string]Member, error) {
	resp, err := e.c.Get(ctx, e.members, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return decodeMembers(e.members, resp.Kvs)
}

// decodeMembers reads the member keys kvs under prefix members.
func decodeMembers(members string, kvs []*mvccpb.KeyValue) (map[string]Member, error) {
	out := make(map[string]Member, len(kvs))
	for _, kv := range kvs {
		var m Member
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			return nil, fmt.Errorf("replica: member key %s holds %q: %w", kv.Key, kv.Value, err)
		}
		out[strings.TrimPrefix(string(kv.Key), members)] = m
	}
	return out, nil
}

// Close ends the replica's lease (its leader key, if any, goes at once).
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil {
		return e.session.Close()
	}
	return nil
}
