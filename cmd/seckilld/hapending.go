package main

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/replica"
)

// A replica set keeps the definitions of many SKUs in progress (a
// campaign PUT) in etcd, under the set's keys (replica/pending.go), not in
// the primary's data dir: after a failover in the middle of one, the new
// primary finishes it as a single node's start finishes its
// pending-define-* file, and a former primary rejoining as standby has no
// list of its own to finish. etcd rather than the replication stream:
// the set's keys have one owner, the primary of the moment, whose every
// write compares its leader key in the same transaction (as the sync key's
// do), so a deposed primary writes nothing there, and every replica that
// leads next reads the one list; a list shipped on the stream would be a
// copy on each standby, and which copy is current (the primary's removal
// shipped or not, a former primary's own) would need an agreement of its
// own. The list is written once per definition of many SKUs, not per
// reserve: one etcd transaction before the first SKU, one after the last.

// pendingKeys is the part of replica.Etcd that keeps the set's lists.
type pendingKeys interface {
	PutPending(ctx context.Context, h replica.Holding, key string, value []byte) error
	DeletePending(ctx context.Context, h replica.Holding, key string) error
	Pending(ctx context.Context) ([]replica.PendingEntry, error)
}

// maxPendingValue bounds a list's value: etcd refuses a request larger
// than its --max-request-bytes (1.5 MiB by default). A campaign PUT's body
// is at most 1 MiB, and its list, compressed, is about as large at worst
// (random SKU ids); the usual list is a few KiB.
const maxPendingValue = 1 << 20

// pendingSeq names the lists of one primary's epoch apart.
var pendingSeq atomic.Uint64

// setPending is a primary tenure's actors.PendingStore: the set's lists,
// each written and removed under the tenure's holding. A key is the
// epoch and a sequence number, so the lists sort by when they were
// written (epochs only grow).
type setPending struct {
	keys    pendingKeys
	h       replica.Holding
	timeout time.Duration // each etcd call's bound
}

func (s setPending) Put(defs []sku.Definition) (string, error) {
	value, err := deflate(actors.EncodePending(defs))
	if err != nil {
		return "", err
	}
	if len(value) > maxPendingValue {
		return "", fmt.Errorf("%w: the definitions of %d SKUs take %d bytes compressed, more than the %d a replica set keeps in etcd: define the campaign in several PUTs",
			actors.ErrInvalidArgument, len(defs), len(value), maxPendingValue)
	}
	key := fmt.Sprintf("%020d-%020d", s.h.Epoch, pendingSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.keys.PutPending(ctx, s.h, key, value); err != nil {
		// Unanswered, it may stand: no list may finish a definition whose
		// caller is told nothing was applied.
		if !errors.Is(err, replica.ErrNotLeader) {
			dctx, dcancel := context.WithTimeout(context.Background(), s.timeout)
			_ = s.keys.DeletePending(dctx, s.h, key)
			dcancel()
		}
		// %v: a deadline of the etcd call is no unknown result of the
		// definition, which has not begun.
		return "", fmt.Errorf("%w: recording the pending definitions in etcd: %v", actors.ErrUnavailable, err)
	}
	return key, nil
}

func (s setPending) Remove(key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.keys.DeletePending(ctx, s.h, key)
}

// Finisher: the set's lists are read by each primary as it takes the
// lead, not by this replica's next start.
func (setPending) Finisher() actors.Finisher { return actors.FinishedByNextPrimary }

func (s setPending) List(ctx context.Context) ([]actors.PendingList, error) {
	entries, err := s.keys.Pending(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]actors.PendingList, 0, len(entries))
	for _, e := range entries {
		l := actors.PendingList{Key: e.Key}
		b, err := inflate(e.Value)
		if err == nil {
			l.Defs, err = actors.DecodePending(b)
		}
		l.Err = err
		out = append(out, l)
	}
	return out, nil
}

func deflate(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func inflate(b []byte) ([]byte, error) {
	return io.ReadAll(flate.NewReader(bytes.NewReader(b)))
}
