package ledger

import (
	"context"
	"slices"
	"sync"
)

// Memory is the ledger in memory: the same operations, answers and rules
// (rules.go) as Ledger, linearizable under one lock, for the simulator and
// tests (hashicorp/raft's InmemStore beside its BoltDB store). Its answers
// are never lost and it never fails but for a done context: whoever needs
// faults wraps it. Safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	revision int64
	epochs   map[string]uint64
	skus     map[SKU]*memorySKU
}

// memorySKU is one SKU's keys: allocations and returns by cell in seq
// order, write-offs, log marks and return requests by cell.
type memorySKU struct {
	pool      Pool
	allocs    map[string][]Allocation
	returns   map[string][]Allocation
	writeOffs map[string]WriteOff
	logs      map[string]LogMark
	requests  map[string]ReturnRequest
}

// NewMemory returns an empty ledger.
func NewMemory() *Memory {
	return &Memory{epochs: map[string]uint64{}, skus: map[SKU]*memorySKU{}}
}

// Publish is Ledger.Publish (no local claims and no extra keys here).
func (m *Memory) Publish(ctx context.Context, s SKU, saleLimit, chunk uint32, initial []InitialGrant) ([]Allocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pool, allocs, err := publish(saleLimit, chunk, initial)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.skus[s] != nil {
		return nil, ErrExists
	}
	k := &memorySKU{pool: pool, allocs: map[string][]Allocation{}, returns: map[string][]Allocation{},
		writeOffs: map[string]WriteOff{}, logs: map[string]LogMark{}, requests: map[string]ReturnRequest{}}
	for _, a := range allocs {
		k.allocs[a.Cell] = []Allocation{a}
	}
	m.skus[s] = k
	m.revision++
	return allocs, nil
}

// Epoch is Ledger.Epoch.
func (m *Memory) Epoch(ctx context.Context, cell string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epochs[cell], nil
}

// BumpEpoch is Ledger.BumpEpoch.
func (m *Memory) BumpEpoch(ctx context.Context, cell string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epochs[cell]++
	m.revision++
	return m.epochs[cell], nil
}

// read returns what an operation of cell on SKU s reads (seq's allocation,
// or return with returns set), and the SKU's keys (nil without a ledger).
func (m *Memory) read(s SKU, cell string, seq uint64, returns bool) (cellRead, *memorySKU) {
	k := m.skus[s]
	v := cellRead{epoch: m.epochs[cell], poolErr: ErrNotFound}
	if k == nil {
		return v, nil
	}
	v.pool, v.poolErr = k.pool, nil
	_, v.writtenOff = k.writeOffs[cell]
	_, v.marked = k.logs[cell]
	v.grants, v.returns = k.allocs[cell], k.returns[cell]
	stored := v.grants
	if returns {
		stored = v.returns
	}
	if i := slices.IndexFunc(stored, func(a Allocation) bool { return a.Seq == seq }); i >= 0 {
		v.stored, v.existing = true, cloneAllocation(stored[i])
	}
	return v, k
}

// Allocate is Ledger.Allocate.
func (m *Memory) Allocate(ctx context.Context, s SKU, cell string, seq, epoch uint64, units uint32) (Allocation, error) {
	if err := checkAllocate(cell, seq, epoch, units); err != nil {
		return Allocation{}, err
	}
	if err := ctx.Err(); err != nil {
		return Allocation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, k := m.read(s, cell, seq, false)
	a, next, write, err := v.allocate(cell, seq, epoch, units)
	if !write {
		return a, err
	}
	k.pool = next
	k.allocs[cell] = insertBySeq(k.allocs[cell], a)
	m.revision++
	return cloneAllocation(a), nil
}

// Credit is Ledger.Credit.
func (m *Memory) Credit(ctx context.Context, s SKU, cell string, epoch uint64, ret Allocation) error {
	if err := checkCredit(cell, ret); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, k := m.read(s, cell, ret.Seq, true)
	next, write, err := v.credit(epoch, ret)
	if !write {
		return err
	}
	k.pool = next
	k.returns[cell] = insertBySeq(k.returns[cell], cloneAllocation(ret))
	m.revision++
	return nil
}

// Allocations is Ledger.Allocations.
func (m *Memory) Allocations(ctx context.Context, s SKU, cell string) ([]Allocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.skus[s]
	if k == nil {
		return []Allocation{}, nil
	}
	if _, ok := k.writeOffs[cell]; ok {
		return nil, ErrWrittenOff
	}
	return cloneAllocations(k.allocs[cell]), nil
}

// Returns is Ledger.Returns.
func (m *Memory) Returns(ctx context.Context, s SKU, cell string) ([]Allocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := m.skus[s]; k != nil {
		return cloneAllocations(k.returns[cell]), nil
	}
	return []Allocation{}, nil
}

// WriteOffCell is Ledger.WriteOffCell.
func (m *Memory) WriteOffCell(ctx context.Context, s SKU, cell string, atMs int64) (WriteOff, error) {
	if err := ctx.Err(); err != nil {
		return WriteOff{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.skus[s]
	if k == nil {
		return WriteOff{}, ErrNotFound
	}
	if w, ok := k.writeOffs[cell]; ok {
		return w, nil
	}
	w := writeOff(cell, k.allocs[cell], k.returns[cell], atMs)
	k.writeOffs[cell] = w
	m.revision++
	return w, nil
}

// MarkLog is Ledger.MarkLog.
func (m *Memory) MarkLog(ctx context.Context, s SKU, cell string, epoch uint64) error {
	if err := checkMarkLog(cell, epoch); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, k := m.read(s, cell, 0, false)
	write, err := v.markLog(epoch)
	if !write {
		return err
	}
	k.logs[cell] = LogMark{Cell: cell, Epoch: epoch}
	m.revision++
	return nil
}

// LogMarked is Ledger.LogMarked.
func (m *Memory) LogMarked(ctx context.Context, s SKU, cell string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, _ := m.read(s, cell, 0, false)
	return v.logMarked()
}

// RequestReturn is Ledger.RequestReturn.
func (m *Memory) RequestReturn(ctx context.Context, s SKU, cell string, req ReturnRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.skus[s]
	if k == nil {
		return ErrNotFound
	}
	k.requests[cell] = req
	m.revision++
	return nil
}

// ReturnRequest is Ledger.ReturnRequest.
func (m *Memory) ReturnRequest(ctx context.Context, s SKU, cell string) (ReturnRequest, bool, error) {
	if err := ctx.Err(); err != nil {
		return ReturnRequest{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.skus[s]
	if k == nil {
		return ReturnRequest{}, false, nil
	}
	req, ok := k.requests[cell]
	return req, ok, nil
}

// Read is Ledger.Read; Revision counts the changes made.
func (m *Memory) Read(ctx context.Context, s SKU) (State, error) {
	if err := ctx.Err(); err != nil {
		return State{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.skus[s]
	if k == nil {
		return State{}, ErrNotFound
	}
	st := State{Revision: m.revision, Pool: k.pool, Allocs: map[string][]Allocation{}, Returns: map[string][]Allocation{}, WrittenOff: map[string]WriteOff{}, Logs: map[string]LogMark{}}
	st.Pool.Free = slices.Clone(k.pool.Free)
	for cell, as := range k.allocs {
		st.Allocs[cell] = cloneAllocations(as)
	}
	for cell, rs := range k.returns {
		st.Returns[cell] = cloneAllocations(rs)
	}
	for cell, w := range k.writeOffs {
		st.WrittenOff[cell] = w
	}
	for cell, mark := range k.logs {
		st.Logs[cell] = mark
	}
	return st, nil
}

// insertBySeq adds a to as (seq order), as etcd's keys sort.
func insertBySeq(as []Allocation, a Allocation) []Allocation {
	i, _ := slices.BinarySearchFunc(as, a.Seq, func(x Allocation, seq uint64) int {
		switch {
		case x.Seq < seq:
			return -1
		case x.Seq > seq:
			return 1
		}
		return 0
	})
	return slices.Insert(as, i, a)
}

func cloneAllocation(a Allocation) Allocation {
	a.Ranges = slices.Clone(a.Ranges)
	return a
}

func cloneAllocations(as []Allocation) []Allocation {
	out := make([]Allocation, len(as))
	for i, a := range as {
		out[i] = cloneAllocation(a)
	}
	return out
}
