// Package ledger is the quota ledger of celled SKUs, kept in etcd: which
// token ranges each cell was granted and returned, and what the central
// pool still holds. etcd transactions are its only concurrency control
// (no locks, no leases: a lease cannot fence a paused holder, see
// "Guarantees and their limits" of docs/cells.md). A cell's own log is the other half of the
// story (sku GRANT/RETURN/EPOCH records): a cell sells a token only after
// its GRANT is durable, and logs a RETURN before Credit.
//
// The rules of each operation (what an allocation or a credit answers and
// writes, given what it read) are in rules.go, apart from etcd: Ledger
// applies them inside etcd transactions, Memory (memory.go) under a lock,
// for the simulator and tests.
//
// Key layout, all under one prefix (DefaultPrefix):
//
//	<prefix>/cells/<cell>/epoch                              decimal epoch, bumped by each process that opens the cell
//	<prefix>/cells/<cell>/addr                               the cell's HTTP base URL, for operators and clients sent to the wrong cell (never for safety)
//	<prefix>/campaigns/<c>/skus/<s>/ledger                   JSON Pool
//	<prefix>/campaigns/<c>/skus/<s>/allocs/<cell>/<seq>      JSON Allocation, created once, never changed
//	<prefix>/campaigns/<c>/skus/<s>/returns/<cell>/<seq>     JSON Allocation, created once, never changed
//	<prefix>/campaigns/<c>/skus/<s>/cellmap                  JSON cell map (package cells), created once
//	<prefix>/campaigns/<c>/skus/<s>/definition               JSON SKU definition (package cells), created once
//	<prefix>/campaigns/<c>/skus/<s>/return_requests/<cell>   JSON {"units": n}, written by seckillctl
//	<prefix>/campaigns/<c>/skus/<s>/writeoffs/<cell>         JSON WriteOff (writeoff.go), created once
//	<prefix>/campaigns/<c>/skus/<s>/logs/<cell>              JSON LogMark (logmark.go): the cell's log of the SKU recorded an EPOCH; created once
//	<prefix>/campaigns/<c>/routing                           JSON campaign routing (package cells), created once
//	<prefix>/campaigns/<c>/local                             the cell that defines the campaign locally (local.go), created once
//
// <seq> is 20 decimal digits, so keys sort by seq. An allocation is
// created only by a transaction that checks, at once, that the ledger is
// unchanged since it was read (ModRevision), that the allocation key does
// not exist (CreateRevision == 0) and that the cell's epoch is the
// caller's; a retry of a top-up whose answer was lost uses the same seq
// and finds its allocation instead of making a second one.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/seckill/seckill/actors/sku"
)

// DefaultPrefix is the key prefix of the ledger.
const DefaultPrefix = "/seckill/v1"

// maxCASAttempts bounds the re-reads of one operation when other writers
// keep changing the ledger between its read and its transaction.
const maxCASAttempts = 64

// Errors. Every other error is etcd's (unreachable, timed out): the
// outcome is then unknown and the caller retries with the same seq.
var (
	// ErrExists: Publish found the SKU's ledger already published.
	ErrExists = errors.New("ledger: already published")
	// ErrNotFound: the SKU has no ledger.
	ErrNotFound = errors.New("ledger: no ledger for this SKU")
	// ErrFenced: the cell's epoch in etcd is not the caller's: another
	// process opened the cell since. The caller must stop writing.
	ErrFenced = errors.New("ledger: fenced: the cell's epoch moved on")
	// ErrExhausted: nothing is left to grant.
	ErrExhausted = errors.New("ledger: nothing left to grant")
	// ErrContended: maxCASAttempts transactions failed their compare.
	ErrContended = errors.New("ledger: too many concurrent changes")
	// ErrNotOwned: a return names tokens the cell does not hold per the
	// ledger. Nothing is credited.
	ErrNotOwned = errors.New("ledger: returned tokens are not the cell's")
	// ErrCorrupt: a value in etcd does not parse or breaks the pool's rules.
	ErrCorrupt = errors.New("ledger: corrupt value")
)

// SKU names one celled SKU of a campaign.
type SKU struct {
	Campaign string
	SKU      string
}

// Allocation is one grant (or return) as stored: the cell, the seq, the
// epoch of the process that made it (0: seckillctl's initial grants) and
// the token ranges.
type Allocation struct {
	Cell   string           `json:"cell"`
	Seq    uint64           `json:"seq"`
	Epoch  uint64           `json:"epoch"`
	Ranges []sku.TokenRange `json:"ranges"`
}

// Units returns the number of tokens of a.
func (a Allocation) Units() uint64 { return sku.RangesUnits(a.Ranges) }

// SKUAllocation returns a as the sku package's Allocation (for a GRANT).
func (a Allocation) SKUAllocation() sku.Allocation {
	return sku.Allocation{Seq: a.Seq, Epoch: a.Epoch, Ranges: a.Ranges}
}

// Ledger reads and writes the ledger through an etcd client.
type Ledger struct {
	c      *clientv3.Client
	prefix string
	// beforeCommit, when set (tests only), runs between the read and the
	// transaction of Allocate.
	beforeCommit atomic.Pointer[func()]
}

// New returns a Ledger on client c under prefix ("" = DefaultPrefix).
func New(c *clientv3.Client, prefix string) *Ledger {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Ledger{c: c, prefix: strings.TrimSuffix(prefix, "/")}
}

// Dial connects to etcd. It does not wait for a connection: the first
// operation does, within its context.
func Dial(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(), // errors reach the caller; retries are the caller's
	})
}

// Keys.

func (l *Ledger) epochKey(cell string) string { return l.prefix + "/cells/" + cell + "/epoch" }
func (l *Ledger) skuKey(s SKU) string {
	return l.prefix + "/campaigns/" + s.Campaign + "/skus/" + s.SKU
}
func (l *Ledger) poolKey(s SKU) string { return l.skuKey(s) + "/ledger" }
func (l *Ledger) allocKey(s SKU, cell string, seq uint64) string {
	return fmt.Sprintf("%s/allocs/%s/%020d", l.skuKey(s), cell, seq)
}
func (l *Ledger) returnKey(s SKU, cell string, seq uint64) string {
	return fmt.Sprintf("%s/returns/%s/%020d", l.skuKey(s), cell, seq)
}

// CellMapKey is the key of the SKU's cell map (written by package cells).
func (l *Ledger) CellMapKey(s SKU) string { return l.skuKey(s) + "/cellmap" }

// AddrKey is the key where a cell announces its HTTP base URL.
func (l *Ledger) AddrKey(cell string) string { return l.prefix + "/cells/" + cell + "/addr" }

// CellAddrs reads the HTTP base URLs the cells announced (AddrKey), by
// cell: a cell names the right cell's address in its 421 WRONG_CELL.
func (l *Ledger) CellAddrs(ctx context.Context) (map[string]string, error) {
	prefix := l.prefix + "/cells/"
	resp, err := l.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	addrs := map[string]string{}
	for _, kv := range resp.Kvs {
		cell, ok := strings.CutSuffix(strings.TrimPrefix(string(kv.Key), prefix), "/addr")
		if ok && !strings.Contains(cell, "/") {
			addrs[cell] = string(kv.Value)
		}
	}
	return addrs, nil
}

// DefinitionKey is the key of the SKU's published definition (written by
// package cells).
func (l *Ledger) DefinitionKey(s SKU) string { return l.skuKey(s) + "/definition" }

// CampaignKey is the key of a campaign's routing, the same for all its
// celled SKUs (written by package cells; not under any SKU's keys).
func (l *Ledger) CampaignKey(campaign string) string {
	return l.prefix + "/campaigns/" + campaign + "/routing"
}

// CampaignsPrefix is the prefix of every SKU's keys.
func (l *Ledger) CampaignsPrefix() string { return l.prefix + "/campaigns/" }

// ReturnRequestKey is the key where seckillctl asks cell for a return.
func (l *Ledger) ReturnRequestKey(s SKU, cell string) string {
	return l.skuKey(s) + "/return_requests/" + cell
}

// SetBeforeCommit installs f (nil: none) to run in Allocate between its
// read and its transaction: a fault-test hook (e.g. cut the link so that
// the transaction commits and its answer is lost). Not for production.
func (l *Ledger) SetBeforeCommit(f func()) {
	if f == nil {
		l.beforeCommit.Store(nil)
		return
	}
	l.beforeCommit.Store(&f)
}

// Client returns the etcd client.
func (l *Ledger) Client() *clientv3.Client { return l.c }

// InitialGrant is the units Publish grants one cell as its allocation 1.
type InitialGrant struct {
	Cell  string
	Units uint32
}

// Publish creates the SKU's ledger with sale_limit and top-up chunk, and
// each cell's allocation 1 from the initial grants (none for a grant of 0
// units), in one transaction,
// only if the ledger does not exist yet (ErrExists otherwise). extra
// (may be nil) are further puts to make in the same transaction, such as
// the cell map.
func (l *Ledger) Publish(ctx context.Context, s SKU, saleLimit, chunk uint32, initial []InitialGrant, extra ...clientv3.Op) ([]Allocation, error) {
	return l.PublishIf(ctx, s, saleLimit, chunk, initial, nil, extra...)
}

// PublishIf is Publish that also requires cond (such as a campaign key
// unchanged since it was read); ErrContended when the SKU's ledger does
// not exist but cond failed (read again and retry). Publish and PublishIf
// also require, in the transaction, that no cell defines the campaign
// locally (LocalKey): a *LocalError naming the cell otherwise.
func (l *Ledger) PublishIf(ctx context.Context, s SKU, saleLimit, chunk uint32, initial []InitialGrant, cond []clientv3.Cmp, extra ...clientv3.Op) ([]Allocation, error) {
	pool, allocs, err := publish(saleLimit, chunk, initial)
	if err != nil {
		return nil, err
	}
	ops := append([]clientv3.Op(nil), extra...)
	for _, a := range allocs {
		ops = append(ops, clientv3.OpPut(l.allocKey(s, a.Cell, a.Seq), mustJSON(a)))
	}
	ops = append(ops, clientv3.OpPut(l.poolKey(s), mustJSON(pool)))
	local := l.LocalKey(s.Campaign)
	cmps := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(l.poolKey(s)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(local), "=", 0)}, cond...)
	resp, err := l.c.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(l.poolKey(s), clientv3.WithCountOnly()), clientv3.OpGet(local)).Commit()
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			return nil, &LocalError{Campaign: s.Campaign, Cell: string(kvs[0].Value)}
		}
		if resp.Responses[0].GetResponseRange().Count == 0 {
			return nil, ErrContended
		}
		return nil, ErrExists
	}
	return allocs, nil
}

// Epoch returns the cell's epoch in etcd (0 when never bumped).
func (l *Ledger) Epoch(ctx context.Context, cell string) (uint64, error) {
	resp, err := l.c.Get(ctx, l.epochKey(cell))
	if err != nil {
		return 0, err
	}
	e, _, err := epochOf(resp.Kvs)
	return e, err
}

// BumpEpoch raises the cell's epoch by one and returns it: the process
// that calls it fences every earlier process of the cell out of the
// ledger. Only a process that holds the cell's data dir calls it.
func (l *Ledger) BumpEpoch(ctx context.Context, cell string) (uint64, error) {
	key := l.epochKey(cell)
	for range maxCASAttempts {
		resp, err := l.c.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		e, rev, err := epochOf(resp.Kvs)
		if err != nil {
			return 0, err
		}
		txn, err := l.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, strconv.FormatUint(e+1, 10))).Commit()
		if err != nil {
			return 0, err
		}
		if txn.Succeeded {
			return e + 1, nil
		}
	}
	return 0, ErrContended
}

// Allocate grants cell up to units tokens (0: the ledger's chunk; at
// most what is left) as
// allocation seq, under the cell's epoch. If allocation seq exists it is
// returned as it is, whatever its size: a retry after a lost answer finds
// what the first try made. ErrFenced when the cell's epoch is not epoch,
// ErrExhausted when nothing is left, ErrNotFound without a ledger; any
// other error leaves the outcome unknown: retry with the same seq.
func (l *Ledger) Allocate(ctx context.Context, s SKU, cell string, seq, epoch uint64, units uint32) (Allocation, error) {
	if err := checkAllocate(cell, seq, epoch, units); err != nil {
		return Allocation{}, err
	}
	poolKey, epochKey, allocKey, woKey := l.poolKey(s), l.epochKey(cell), l.allocKey(s, cell, seq), l.writeOffKey(s, cell)
	for range maxCASAttempts {
		resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(poolKey), clientv3.OpGet(epochKey), clientv3.OpGet(allocKey), clientv3.OpGet(woKey)).Commit()
		if err != nil {
			return Allocation{}, err
		}
		v := cellRead{writtenOff: len(resp.Responses[3].GetResponseRange().Kvs) == 1}
		var rev int64
		v.pool, rev, v.poolErr = poolOf(resp.Responses[0].GetResponseRange().Kvs)
		v.epoch, _, v.epochErr = epochOf(resp.Responses[1].GetResponseRange().Kvs)
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 && !v.writtenOff && !plantedNoCreateGuard {
			if v.existing, err = decodeAllocation(kvs[0].Value); err != nil {
				return Allocation{}, err
			}
			v.stored = true
		}
		a, next, write, err := v.allocate(cell, seq, epoch, units)
		if !write {
			return a, err
		}
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(poolKey), "=", rev),
			clientv3.Compare(clientv3.Value(epochKey), "=", strconv.FormatUint(epoch, 10)),
			clientv3.Compare(clientv3.CreateRevision(woKey), "=", 0),
		}
		if !plantedNoCreateGuard {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(allocKey), "=", 0))
		}
		if f := l.beforeCommit.Load(); f != nil {
			(*f)()
		}
		txn, err := l.c.Txn(ctx).If(cmps...).Then(clientv3.OpPut(poolKey, mustJSON(next)), clientv3.OpPut(allocKey, mustJSON(a))).Commit()
		if err != nil {
			return Allocation{}, err
		}
		if txn.Succeeded {
			return a, nil
		}
		// A compare failed: re-read; never grant from a stale pool.
	}
	return Allocation{}, ErrContended
}

// Credit puts the tokens of a return the cell has durably logged (RETURN)
// back into the central pool, as return ret.Seq, under the calling
// process's epoch. A return already credited is not credited again.
// ErrNotOwned when a token of ret is not the cell's per the ledger,
// ErrFenced as for Allocate; any other error: retry with the same ret.
func (l *Ledger) Credit(ctx context.Context, s SKU, cell string, epoch uint64, ret Allocation) error {
	if err := checkCredit(cell, ret); err != nil {
		return err
	}
	poolKey, epochKey, retKey, woKey := l.poolKey(s), l.epochKey(cell), l.returnKey(s, cell, ret.Seq), l.writeOffKey(s, cell)
	for range maxCASAttempts {
		resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(poolKey), clientv3.OpGet(epochKey), clientv3.OpGet(retKey),
			clientv3.OpGet(l.skuKey(s)+"/allocs/"+cell+"/", clientv3.WithPrefix()),
			clientv3.OpGet(l.skuKey(s)+"/returns/"+cell+"/", clientv3.WithPrefix()), clientv3.OpGet(woKey)).Commit()
		if err != nil {
			return err
		}
		v := cellRead{writtenOff: len(resp.Responses[5].GetResponseRange().Kvs) == 1, stored: len(resp.Responses[2].GetResponseRange().Kvs) == 1}
		var rev int64
		v.pool, rev, v.poolErr = poolOf(resp.Responses[0].GetResponseRange().Kvs)
		v.epoch, _, v.epochErr = epochOf(resp.Responses[1].GetResponseRange().Kvs)
		if v.grants, v.listErr = decodeAllocations(resp.Responses[3].GetResponseRange().Kvs); v.listErr == nil {
			v.returns, v.listErr = decodeAllocations(resp.Responses[4].GetResponseRange().Kvs)
		}
		next, write, err := v.credit(epoch, ret)
		if !write {
			return err
		}
		txn, err := l.c.Txn(ctx).If(
			clientv3.Compare(clientv3.ModRevision(poolKey), "=", rev),
			clientv3.Compare(clientv3.Value(epochKey), "=", strconv.FormatUint(epoch, 10)),
			clientv3.Compare(clientv3.CreateRevision(retKey), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(woKey), "=", 0),
		).Then(clientv3.OpPut(poolKey, mustJSON(next)), clientv3.OpPut(retKey, mustJSON(ret))).Commit()
		if err != nil {
			return err
		}
		if txn.Succeeded {
			return nil
		}
	}
	return ErrContended
}

// Allocations returns the cell's allocations in seq order, for the cell
// to log (reconciliation); ErrWrittenOff once its quota was written off.
func (l *Ledger) Allocations(ctx context.Context, s SKU, cell string) ([]Allocation, error) {
	resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(l.skuKey(s)+"/allocs/"+cell+"/", clientv3.WithPrefix()),
		clientv3.OpGet(l.writeOffKey(s, cell))).Commit()
	if err != nil {
		return nil, err
	}
	if len(resp.Responses[1].GetResponseRange().Kvs) == 1 {
		return nil, ErrWrittenOff
	}
	return decodeAllocations(resp.Responses[0].GetResponseRange().Kvs)
}

// Returns returns the cell's credited returns in seq order.
func (l *Ledger) Returns(ctx context.Context, s SKU, cell string) ([]Allocation, error) {
	return l.list(ctx, l.skuKey(s)+"/returns/"+cell+"/")
}

func (l *Ledger) list(ctx context.Context, prefix string) ([]Allocation, error) {
	resp, err := l.c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return decodeAllocations(resp.Kvs)
}

// Decoding.

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("ledger: " + err.Error()) // only plain structs are marshalled
	}
	return string(b)
}

func epochOf(kvs []*mvccKV) (uint64, int64, error) {
	if len(kvs) == 0 {
		return 0, 0, nil
	}
	e, err := strconv.ParseUint(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: epoch %q", ErrCorrupt, kvs[0].Value)
	}
	return e, kvs[0].ModRevision, nil
}

func poolOf(kvs []*mvccKV) (Pool, int64, error) {
	if len(kvs) == 0 {
		return Pool{}, 0, ErrNotFound
	}
	var p Pool
	if err := json.Unmarshal(kvs[0].Value, &p); err != nil {
		return Pool{}, 0, fmt.Errorf("%w: ledger: %v", ErrCorrupt, err)
	}
	if err := p.validate(); err != nil {
		return Pool{}, 0, fmt.Errorf("%w: ledger: %v", ErrCorrupt, err)
	}
	return p, kvs[0].ModRevision, nil
}

func decodeAllocation(b []byte) (Allocation, error) {
	var a Allocation
	if err := json.Unmarshal(b, &a); err != nil {
		return Allocation{}, fmt.Errorf("%w: allocation: %v", ErrCorrupt, err)
	}
	if err := sku.CheckRanges(a.Ranges, sku.MaxSaleLimit); err != nil || a.Seq == 0 {
		return Allocation{}, fmt.Errorf("%w: allocation %d: %v", ErrCorrupt, a.Seq, err)
	}
	return a, nil
}

func decodeAllocations(kvs []*mvccKV) ([]Allocation, error) {
	out := make([]Allocation, 0, len(kvs))
	for _, kv := range kvs {
		a, err := decodeAllocation(kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
