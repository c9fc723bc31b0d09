package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors/sku"
)

// A log mark says that a cell's log of a SKU has recorded an EPOCH, and so
// may hold sales. The cell's agent creates it once that EPOCH is durable
// and before it logs the cell's first GRANT, so a cell that ever sold a
// token of the SKU has its mark. A process of the cell whose log of the
// SKU holds no EPOCH yet, but whose mark exists, runs on a data dir that
// is not the one that sold (a lost disk, an orchestrator that restarted
// the cell on a fresh volume): the allocations etcd lists for the cell
// were sold, maybe paid, in the lost log, and granting them again would
// sell them twice. Its agent grants nothing and asks for the write-off
// (WriteOffCell), which leaves the mark as it is.
//
// Key: <prefix>/campaigns/<c>/skus/<s>/logs/<cell>   JSON LogMark, created once, never changed

// LogMark is the mark of one cell's log of one SKU.
type LogMark struct {
	Cell string `json:"cell"`
	// Epoch is the epoch of the process that created the mark.
	Epoch uint64 `json:"epoch"`
}

func (l *Ledger) logMarkKey(s SKU, cell string) string { return l.skuKey(s) + "/logs/" + cell }

// checkMarkLog checks MarkLog's arguments.
func checkMarkLog(cell string, epoch uint64) error {
	if epoch == 0 || !sku.ValidID(cell) {
		return fmt.Errorf("ledger: mark log: epoch %d, cell %q", epoch, cell)
	}
	return nil
}

// MarkLog creates cell's log mark of SKU s under the cell's epoch; a mark
// that exists is left as it is (a retry after a lost answer, a restart of
// the same log). ErrWrittenOff once the cell's quota of s was written off,
// ErrFenced when the cell's epoch is not epoch, ErrNotFound without a
// ledger; any other error leaves the outcome unknown: retry.
func (l *Ledger) MarkLog(ctx context.Context, s SKU, cell string, epoch uint64) error {
	if err := checkMarkLog(cell, epoch); err != nil {
		return err
	}
	poolKey, epochKey, markKey, woKey := l.poolKey(s), l.epochKey(cell), l.logMarkKey(s, cell), l.writeOffKey(s, cell)
	for range maxCASAttempts {
		resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(poolKey, clientv3.WithCountOnly()), clientv3.OpGet(epochKey),
			clientv3.OpGet(markKey, clientv3.WithCountOnly()), clientv3.OpGet(woKey, clientv3.WithCountOnly())).Commit()
		if err != nil {
			return err
		}
		r := resp.Responses
		v := markRead(r[0].GetResponseRange().Count, r[2].GetResponseRange().Count, r[3].GetResponseRange().Count)
		v.epoch, _, v.epochErr = epochOf(resp.Responses[1].GetResponseRange().Kvs)
		write, err := v.markLog(epoch)
		if !write {
			return err
		}
		txn, err := l.c.Txn(ctx).If(
			clientv3.Compare(clientv3.Value(epochKey), "=", strconv.FormatUint(epoch, 10)),
			clientv3.Compare(clientv3.CreateRevision(markKey), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(woKey), "=", 0),
		).Then(clientv3.OpPut(markKey, mustJSON(LogMark{Cell: cell, Epoch: epoch}))).Commit()
		if err != nil {
			return err
		}
		if txn.Succeeded {
			return nil
		}
		// A compare failed: re-read (the mark made meanwhile, the epoch
		// moved on, a write-off).
	}
	return ErrContended
}

// LogMarked reports whether cell's log mark of SKU s exists.
// ErrWrittenOff once the cell's quota of s was written off (whatever the
// mark), ErrNotFound without a ledger.
func (l *Ledger) LogMarked(ctx context.Context, s SKU, cell string) (bool, error) {
	resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(l.poolKey(s), clientv3.WithCountOnly()),
		clientv3.OpGet(l.logMarkKey(s, cell), clientv3.WithCountOnly()), clientv3.OpGet(l.writeOffKey(s, cell), clientv3.WithCountOnly())).Commit()
	if err != nil {
		return false, err
	}
	r := resp.Responses
	return markRead(r[0].GetResponseRange().Count, r[1].GetResponseRange().Count, r[2].GetResponseRange().Count).logMarked()
}

// markRead is what MarkLog and LogMarked read, from the counts of the
// SKU's ledger key, the cell's mark and its write-off (0 or 1 each).
func markRead(pools, marks, writeOffs int64) cellRead {
	v := cellRead{marked: marks == 1, writtenOff: writeOffs == 1}
	if pools == 0 {
		v.poolErr = ErrNotFound
	}
	return v
}

func decodeLogMark(b []byte) (LogMark, error) {
	var m LogMark
	if err := json.Unmarshal(b, &m); err != nil || m.Cell == "" {
		return LogMark{}, fmt.Errorf("%w: log mark: %v", ErrCorrupt, err)
	}
	return m, nil
}
