package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A write-off: a cell whose disk is lost took with it the log of what it
// sold, paid units included, so nobody can tell which of its tokens are
// still unsold. Its outstanding quota (granted - returned per the ledger)
// is written off: the write-off key is created once, and from then on the
// ledger grants the cell nothing, credits it nothing and lists it no
// allocation (ErrWrittenOff), so a process started as that cell on an
// empty data dir cannot be handed the old allocations again, and no token
// of them is ever sold a second time. The tokens stay "held" by the cell
// in the pool's accounting (never free), so conservation reads:
// Σ held (written-off cells included) + free + never granted = sale_limit,
// and the written-off units are the undersell the loss caused.
//
// Key: <prefix>/campaigns/<c>/skus/<s>/writeoffs/<cell>   JSON WriteOff, created once, never changed

// ErrWrittenOff: the cell's quota of this SKU was written off (a lost
// disk); the ledger serves the cell no more.
var ErrWrittenOff = errors.New("ledger: the cell's quota was written off")

// WriteOff is a cell's written-off quota of one SKU.
type WriteOff struct {
	Cell string `json:"cell"`
	// Units is what the cell held per the ledger when written off.
	Units uint64 `json:"units"`
	// Allocations and Returns are the cell's counts at that time.
	Allocations int   `json:"allocations"`
	Returns     int   `json:"returns"`
	AtMs        int64 `json:"at_ms"`
}

func (l *Ledger) writeOffKey(s SKU, cell string) string { return l.skuKey(s) + "/writeoffs/" + cell }

// WriteOffCell writes off cell's outstanding quota of SKU s at atMs (Unix
// ms), in one transaction that also checks the ledger unchanged since it
// was read (no allocation or credit slips in between). It is idempotent:
// a cell written off before gets its first write-off back. The caller
// (the operator) asserts that the cell's data dir is lost: a live process
// of the cell would keep selling what its log holds, and be refused every
// later top-up.
func (l *Ledger) WriteOffCell(ctx context.Context, s SKU, cell string, atMs int64) (WriteOff, error) {
	poolKey, woKey := l.poolKey(s), l.writeOffKey(s, cell)
	for range maxCASAttempts {
		resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(poolKey), clientv3.OpGet(woKey),
			clientv3.OpGet(l.skuKey(s)+"/allocs/"+cell+"/", clientv3.WithPrefix()),
			clientv3.OpGet(l.skuKey(s)+"/returns/"+cell+"/", clientv3.WithPrefix())).Commit()
		if err != nil {
			return WriteOff{}, err
		}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			return decodeWriteOff(kvs[0].Value)
		}
		_, rev, err := poolOf(resp.Responses[0].GetResponseRange().Kvs)
		if err != nil {
			return WriteOff{}, err
		}
		grants, err := decodeAllocations(resp.Responses[2].GetResponseRange().Kvs)
		if err != nil {
			return WriteOff{}, err
		}
		returns, err := decodeAllocations(resp.Responses[3].GetResponseRange().Kvs)
		if err != nil {
			return WriteOff{}, err
		}
		w := writeOff(cell, grants, returns, atMs)
		txn, err := l.c.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(poolKey), "=", rev),
			clientv3.Compare(clientv3.CreateRevision(woKey), "=", 0),
		).Then(clientv3.OpPut(woKey, mustJSON(w))).Commit()
		if err != nil {
			return WriteOff{}, err
		}
		if txn.Succeeded {
			return w, nil
		}
	}
	return WriteOff{}, ErrContended
}

// heldUnits is granted - returned over one cell's allocations and returns.
func heldUnits(grants, returns []Allocation) uint64 {
	var n uint64
	for _, a := range grants {
		n += a.Units()
	}
	for _, r := range returns {
		n -= r.Units()
	}
	return n
}

func decodeWriteOff(b []byte) (WriteOff, error) {
	var w WriteOff
	if err := json.Unmarshal(b, &w); err != nil || w.Cell == "" {
		return WriteOff{}, fmt.Errorf("%w: write-off: %v", ErrCorrupt, err)
	}
	return w, nil
}
