package sku

import "fmt"

// Cells: one SKU sold by several seckilld processes. A celled SKU
// (Definition.Cell set) sells only the tokens its cell was granted by the
// quota ledger (package ledger, in etcd), never 1..sale_limit. Three
// records carry the grants in the cell's own log:
//
//   - GRANT adds the token ranges of one allocation (cell, seq) to the pool.
//     It is idempotent by seq: a GRANT for a seq the log already holds, with
//     the same epoch and ranges, changes nothing. A token is sellable only
//     once its GRANT is durable, like every record.
//   - RETURN removes available tokens from the pool. The cell writes it, and
//     waits for it to be durable, before the ledger credits the tokens back,
//     so a token is never sellable here and free in the ledger at once.
//   - EPOCH records the epoch the process holds in the ledger after bumping
//     it at start: the fencing token of the cell's ledger writes.
//
// Per cell: granted = available + reserved + confirmed + returned.
// A SKU that is not celled is the special case of one cell granted
// 1..sale_limit up front: it takes none of these records and behaves as
// before.

// MaxCellChanges bounds the GRANT and the RETURN records one SKU log may
// hold (each). With top-up chunks of 50 a sale of 1,000,000 units needs
// 20,000 grants.
const MaxCellChanges = 1 << 16

// Allocation is one grant of the quota ledger to a cell, or one return of
// a cell to the ledger: the allocation (or return) sequence number, unique
// per cell, the cell's epoch when it was made, and its token ranges (sorted,
// disjoint).
type Allocation struct {
	Seq    uint64
	Epoch  uint64
	Ranges []TokenRange
}

// Units returns the number of tokens of a.
func (a Allocation) Units() uint64 { return RangesUnits(a.Ranges) }

func (a Allocation) equal(b Allocation) bool {
	if a.Seq != b.Seq || a.Epoch != b.Epoch || len(a.Ranges) != len(b.Ranges) {
		return false
	}
	for i := range a.Ranges {
		if a.Ranges[i] != b.Ranges[i] {
			return false
		}
	}
	return true
}

// cellState is what the GRANT, RETURN and EPOCH records built. grants and
// returns are append-only (a frozen state shares them by length); the
// indexes are derived.
type cellState struct {
	epoch       uint64
	grants      []Allocation
	returns     []Allocation
	grantIndex  map[uint64]int // seq -> position in grants
	returnIndex map[uint64]int // seq -> position in returns
	granted     uint64         // units in grants
	returned    uint64         // units in returns
}

func (c *cellState) addGrant(a Allocation) {
	if c.grantIndex == nil {
		c.grantIndex = make(map[uint64]int)
	}
	c.grantIndex[a.Seq] = len(c.grants)
	c.grants = append(c.grants, a)
	c.granted += a.Units()
}

func (c *cellState) addReturn(a Allocation) {
	if c.returnIndex == nil {
		c.returnIndex = make(map[uint64]int)
	}
	c.returnIndex[a.Seq] = len(c.returns)
	c.returns = append(c.returns, a)
	c.returned += a.Units()
}

// Celled reports whether the SKU sells granted quota (Definition.Cell set).
func (m *Machine) Celled() bool { return m.pool.celled }

// Epoch returns the cell's epoch as last recorded (0: none yet).
func (m *Machine) Epoch() uint64 { return m.cell.epoch }

// Grants returns the allocations applied, in log order. The slices are
// shared: do not change them.
func (m *Machine) Grants() []Allocation { return m.cell.grants[:len(m.cell.grants):len(m.cell.grants)] }

// Returns returns the returns recorded, in log order. The slices are
// shared: do not change them.
func (m *Machine) Returns() []Allocation {
	return m.cell.returns[:len(m.cell.returns):len(m.cell.returns)]
}

// HasGrant reports whether allocation seq is in the log.
func (m *Machine) HasGrant(seq uint64) bool { _, ok := m.cell.grantIndex[seq]; return ok }

// MaxGrantSeq returns the highest allocation seq in the log (0: none): the
// next top-up uses max(this, the ledger's) + 1.
func (m *Machine) MaxGrantSeq() uint64 {
	var n uint64
	for _, g := range m.cell.grants {
		n = max(n, g.Seq)
	}
	return n
}

// MaxReturnSeq returns the highest return seq in the log (0: none).
func (m *Machine) MaxReturnSeq() uint64 {
	var n uint64
	for _, r := range m.cell.returns {
		n = max(n, r.Seq)
	}
	return n
}

// Grant adds allocation a of the quota ledger to the pool. It answers
// OutcomeOK with one GRANT record, or with none when a is already in the
// log (idempotent by seq). It answers OutcomeInvalid with an error for a
// SKU that is not celled, a seq the log holds with other content, ranges
// that are malformed or hold a token the cell already owns, or past
// MaxCellChanges.
func (m *Machine) Grant(now int64, a Allocation, out []Record) (Outcome, []Record, error) {
	if err := m.checkGrant(a); err != nil {
		return OutcomeInvalid, out, err
	}
	if m.HasGrant(a.Seq) && !plantedNonIdempotentGrant {
		return OutcomeOK, out, nil
	}
	a.Ranges = append([]TokenRange(nil), a.Ranges...)
	return OutcomeOK, m.emit(&Record{Type: RecordGrant, At: m.decisionTime(now), Cell: &a}, out), nil
}

// checkGrant reports why a cannot be applied; nil also for a repeat of an
// allocation already in the log.
func (m *Machine) checkGrant(a Allocation) error {
	switch {
	case !m.defined:
		return fmt.Errorf("%w: SKU not defined", ErrInvalidDefinition)
	case !m.pool.celled:
		return fmt.Errorf("%w: GRANT on a SKU that is not celled", ErrInvalidDefinition)
	case a.Seq == 0:
		return fmt.Errorf("%w: allocation seq 0", ErrInvalidDefinition)
	}
	if err := CheckRanges(a.Ranges, m.def.SaleLimit); err != nil {
		return fmt.Errorf("%w: allocation %d: %v", ErrInvalidDefinition, a.Seq, err)
	}
	if i, ok := m.cell.grantIndex[a.Seq]; ok && !plantedNonIdempotentGrant {
		if !m.cell.grants[i].equal(a) {
			return fmt.Errorf("%w: allocation %d is in the log with other content", ErrInvalidDefinition, a.Seq)
		}
		return nil
	}
	if len(m.cell.grants) >= MaxCellChanges {
		return fmt.Errorf("%w: more than %d grants", ErrInvalidDefinition, MaxCellChanges)
	}
	if n := m.ownedIn(a.Ranges); n != 0 && !plantedNonIdempotentGrant {
		return fmt.Errorf("%w: allocation %d holds %d tokens the cell already owns", ErrInvalidDefinition, a.Seq, n)
	}
	return nil
}

// ownedIn counts the tokens of the sorted ranges rs the cell owns now:
// queued, released, or bound to a reservation.
func (m *Machine) ownedIn(rs []TokenRange) uint64 {
	n := m.pool.unsold.overlap(rs) + m.releasedIn(rs)
	for _, r := range rs {
		for t := r.First; t <= r.Last && int(t) <= len(m.pool.slots); t++ {
			if m.pool.slots[t-1] != 0 {
				n++
			}
		}
	}
	return n
}

// releasedIn counts the released (available) tokens that lie in rs.
func (m *Machine) releasedIn(rs []TokenRange) uint64 {
	var n uint64
	for _, t := range m.pool.released[m.pool.releasedHead:] {
		if inRanges(rs, t) {
			n++
		}
	}
	return n
}

// ReturnResult is the answer to Machine.Return: the return decided (or the
// one already in the log for that seq), with the units it holds, possibly
// fewer than asked and 0 when nothing is available.
type ReturnResult struct {
	Outcome Outcome
	Return  Allocation
}

// Return removes up to units available tokens from the pool under return
// seq and epoch, with one RETURN record, the tokens queued last first, then
// released ones. The caller credits them to the ledger only once the record
// is durable. A seq already in the log answers that return and writes
// nothing, so a retry of the ledger credit reuses it. Nothing available
// answers OutcomeOK with 0 units and no record. OutcomeInvalid for a SKU
// that is not celled, seq 0, or past MaxCellChanges.
func (m *Machine) Return(now int64, seq, epoch uint64, units uint32, out []Record) (ReturnResult, []Record) {
	if !m.defined || !m.pool.celled || seq == 0 {
		return ReturnResult{Outcome: OutcomeInvalid}, out
	}
	if i, ok := m.cell.returnIndex[seq]; ok {
		return ReturnResult{Outcome: OutcomeOK, Return: m.cell.returns[i]}, out
	}
	if len(m.cell.returns) >= MaxCellChanges {
		return ReturnResult{Outcome: OutcomeInvalid}, out
	}
	units = min(units, m.pool.available())
	ranges := m.pool.unsold.tail(units)
	taken := uint32(RangesUnits(ranges))
	for _, t := range m.pool.released[m.pool.releasedHead:] {
		if taken == units || len(ranges) >= MaxRangesPerRecord-1 {
			break
		}
		ranges = append(ranges, TokenRange{t, t})
		taken++
	}
	ranges = NormalizeRanges(ranges)
	if len(ranges) == 0 {
		return ReturnResult{Outcome: OutcomeOK, Return: Allocation{Seq: seq, Epoch: epoch}}, out
	}
	a := Allocation{Seq: seq, Epoch: epoch, Ranges: ranges}
	out = m.emit(&Record{Type: RecordReturn, At: m.decisionTime(now), Cell: &a}, out)
	return ReturnResult{Outcome: OutcomeOK, Return: a}, out
}

// SetEpoch records the epoch this process holds in the ledger. The same
// epoch answers OutcomeOK with no record; a lower one OutcomeInvalid (a
// stale process): epochs only grow.
func (m *Machine) SetEpoch(now int64, epoch uint64, out []Record) (Outcome, []Record) {
	switch {
	case !m.defined || !m.pool.celled || epoch < m.cell.epoch:
		return OutcomeInvalid, out
	case epoch == m.cell.epoch:
		return OutcomeOK, out
	}
	return OutcomeOK, m.emit(&Record{Type: RecordEpoch, At: m.decisionTime(now), Cell: &Allocation{Epoch: epoch}}, out)
}

func (m *Machine) applyGrant(r *Record) error {
	if r.Cell == nil {
		return notApply(r, "no allocation")
	}
	if err := m.checkGrant(*r.Cell); err != nil {
		return notApply(r, "%v", err)
	}
	if m.HasGrant(r.Cell.Seq) && !plantedNonIdempotentGrant {
		return nil // a repeat of an allocation in the log: idempotent
	}
	m.cell.addGrant(*r.Cell)
	m.pool.unsold.push(r.Cell.Ranges)
	return nil
}

func (m *Machine) applyReturn(r *Record) error {
	a := r.Cell
	switch {
	case a == nil:
		return notApply(r, "no return")
	case !m.pool.celled:
		return notApply(r, "RETURN on a SKU that is not celled")
	case a.Seq == 0:
		return notApply(r, "return seq 0")
	case len(m.cell.returns) >= MaxCellChanges:
		return notApply(r, "more than %d returns", MaxCellChanges)
	}
	if _, ok := m.cell.returnIndex[a.Seq]; ok {
		return notApply(r, "return %d is in the log already", a.Seq)
	}
	if err := CheckRanges(a.Ranges, m.def.SaleLimit); err != nil {
		return notApply(r, "return %d: %v", a.Seq, err)
	}
	queued, released := m.pool.unsold.overlap(a.Ranges), m.releasedIn(a.Ranges)
	if queued+released != a.Units() {
		return notApply(r, "return %d: %d of its %d tokens are available", a.Seq, queued+released, a.Units())
	}
	m.pool.unsold.remove(a.Ranges)
	if released > 0 {
		m.pool.dropReleased(a.Ranges)
	}
	m.cell.addReturn(*a)
	return nil
}

func (m *Machine) applyEpoch(r *Record) error {
	switch {
	case r.Cell == nil:
		return notApply(r, "no epoch")
	case !m.pool.celled:
		return notApply(r, "EPOCH on a SKU that is not celled")
	case r.Cell.Epoch <= m.cell.epoch:
		return notApply(r, "epoch %d is not above %d", r.Cell.Epoch, m.cell.epoch)
	}
	m.cell.epoch = r.Cell.Epoch
	return nil
}

// auditCell checks a celled SKU's pool against its grants and returns:
// the totals in a.Counts recount, granted - returned = available +
// reserved + confirmed, the unsold queue counts its tokens, lies within
// 1..sale_limit and holds no token a row holds (r) or released lists. It
// reads only its arguments, so Machine.Audit and Frozen.Audit share it.
func auditCell(a *Audit, cell *cellState, unsold *rangeQueue, r *rowRecount, released []uint32) {
	c := a.Counts
	var granted, returned uint64
	for _, g := range cell.grants {
		granted += g.Units()
	}
	for _, rt := range cell.returns {
		returned += rt.Units()
	}
	if granted != c.Granted || returned != c.Returned {
		a.violation("grant and return totals %d and %d, recount %d and %d", c.Granted, c.Returned, granted, returned)
	}
	recounted := c
	recounted.Granted, recounted.Returned = granted, returned
	if v := recounted.Conservation(true); v != "" {
		a.violation("%s", v)
	}
	var units uint32
	for _, rg := range unsold.ranges {
		units += rg.Units()
	}
	if units != unsold.units {
		a.violation("unsold queue counts %d tokens, recount %d", unsold.units, units)
	}
	sorted := NormalizeRanges(append([]TokenRange(nil), unsold.ranges...))
	if err := checkSorted(sorted, c.SaleLimit); err != nil {
		a.violation("unsold tokens: %v", err)
		return
	}
	for _, rg := range sorted {
		for t := rg.First; t <= rg.Last && int(t) <= len(r.holder); t++ {
			if r.isHeld(t) {
				a.violation("token %d is unsold and held by %d", t, r.holder[t-1])
			}
		}
	}
	var n int
	for _, t := range released {
		if inRanges(sorted, t) {
			n++
		}
	}
	if n != 0 {
		a.violation("%d released tokens are also unsold", n)
	}
}
