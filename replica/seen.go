package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A replica's record: what it last said of itself, kept under
//
//	<prefix>/replicasets/<set>/seen/<name>
//
// without a lease. The member key (members/<name>) is on the replica's
// lease and goes with it: after a kill -9 nothing else in etcd names the
// replica (a primary is in no sync set), so an operator would not see that
// a member is gone. Its record stays: its addresses, its last role and
// epoch, and when it wrote them, so `seckillctl ha status` lists a member
// whose record outlives its member key as down. Only the live holder of
// the name writes it: each write compares the member key's lease with the
// writer's, in one transaction, as the primary's writes compare its
// leader key; a second process started with the name, or this one once its
// lease ended (paused, cut from etcd), writes nothing. The record of a
// member that will never return is removed by an operator (Forget).

// Seen is a replica's record.
type Seen struct {
	Member
	// Role is the role it last recorded (primary, standby, candidate).
	Role string `json:"role"`
	// Epoch is the set's epoch as it last read it (its own while primary).
	Epoch uint64 `json:"epoch"`
	// At is when it wrote the record, by its clock.
	At time.Time `json:"at"`
}

var (
	// ErrNotRegistered: this replica's member key is not on its live lease
	// (not registered yet, or its lease ended); nothing was written.
	ErrNotRegistered = errors.New("replica: the member key is not on this replica's lease")
	// ErrRegistered: the replica to forget holds its member key (it is
	// live); nothing was removed.
	ErrRegistered = errors.New("replica: the replica is registered (live)")
)

func (e *Etcd) seenKey(name string) string { return e.seen + name }

// PutSeen writes s as this replica's record, if its member key is on the
// replica's live lease (ErrNotRegistered otherwise: nothing written).
func (e *Etcd) PutSeen(ctx context.Context, s Seen) error {
	e.mu.Lock()
	sess := e.session
	e.mu.Unlock()
	if sess == nil {
		return ErrNotRegistered
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	resp, err := e.c.Txn(ctx).If(clientv3.Compare(clientv3.LeaseValue(e.members+e.name), "=", sess.Lease())).
		Then(clientv3.OpPut(e.seenKey(e.name), string(b))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNotRegistered
	}
	return nil
}

// Seen returns the set's records by name.
func (e *Etcd) Seen(ctx context.Context) (map[string]Seen, error) {
	resp, err := e.c.Get(ctx, e.seen, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := make(map[string]Seen, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var s Seen
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			return nil, fmt.Errorf("replica: record %s holds %q: %w", kv.Key, kv.Value, err)
		}
		out[strings.TrimPrefix(string(kv.Key), e.seen)] = s
	}
	return out, nil
}

// Forget removes the record of replica name of set under prefix, for an
// operator whose replica will never return: unless it is registered
// (ErrRegistered: a live replica writes its record again anyway, and
// forgetting it would hide nothing). It reports whether there was one.
func Forget(ctx context.Context, c *clientv3.Client, prefix, set, name string) (bool, error) {
	e, err := NewEtcd(c, prefix, set, name, time.Second)
	if err != nil {
		return false, err
	}
	resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(e.members+name), "=", 0)).
		Then(clientv3.OpDelete(e.seenKey(name))).Commit()
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		return false, fmt.Errorf("%w: %s of replica set %s holds its member key: stop it first", ErrRegistered, name, set)
	}
	return resp.Responses[0].GetResponseDeleteRange().Deleted > 0, nil
}

// ReadSeen returns the records of set under prefix, for tools that are
// no replica (seckillctl ha status).
func ReadSeen(ctx context.Context, c *clientv3.Client, prefix, set string) (map[string]Seen, error) {
	e, err := NewEtcd(c, prefix, set, "reader", time.Second)
	if err != nil {
		return nil, err
	}
	return e.Seen(ctx)
}
