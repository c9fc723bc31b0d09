package replica

import (
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A replica set's pending definitions: a definition of many SKUs (a
// campaign PUT) that the primary began, kept under
//
//	<prefix>/replicasets/<set>/pending/<key>
//
// from before its first SKU is defined until it answered, so that a
// failover in its middle leaves it to the next primary to finish
// (actors.PendingStore). The set's keys are its one owner: every replica
// that leads reads the same list, and none keeps a copy that could go
// stale. Only the primary writes them, each write in a transaction that
// compares its own leader key, as SetSync does: a deposed primary's list
// is never written, nor one its successor holds removed. The value is the
// caller's; this package does not read it.

// PendingEntry is one kept list: its key under pending/ and its value.
type PendingEntry struct {
	Key   string
	Value []byte
}

func (e *Etcd) pendingKey(key string) string { return e.pending + key }

// PutPending keeps value as the list key, if h still holds the leader key
// (ErrNotLeader otherwise: nothing was written).
func (e *Etcd) PutPending(ctx context.Context, h Holding, key string, value []byte) error {
	resp, err := e.c.Txn(ctx).If(e.held(h)).Then(clientv3.OpPut(e.pendingKey(key), string(value))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNotLeader
	}
	return nil
}

// DeletePending removes the list key, if h still holds the leader key
// (ErrNotLeader otherwise: the list stays for the next primary).
func (e *Etcd) DeletePending(ctx context.Context, h Holding, key string) error {
	resp, err := e.c.Txn(ctx).If(e.held(h)).Then(clientv3.OpDelete(e.pendingKey(key))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return ErrNotLeader
	}
	return nil
}

// Pending returns the kept lists, by key.
func (e *Etcd) Pending(ctx context.Context) ([]PendingEntry, error) {
	resp, err := e.c.Get(ctx, e.pending, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]PendingEntry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, PendingEntry{Key: strings.TrimPrefix(string(kv.Key), e.pending), Value: kv.Value})
	}
	return out, nil
}
